# Run the standalone HRM server (seed contract) on Windows PowerShell.
#   .\scripts\run_hrm_server.ps1 [-ModelPath models\hrm-tiny] [-Port 8000] [-Device cpu] [extra args...]
# Env: AIOS_MODEL_PATH, AIOS_DEVICE, AIOS_MAX_BATCH_SIZE, AIOS_MAX_NEW_TOKENS (parameters win).
param(
    [string]$ModelPath = $(if ($env:AIOS_MODEL_PATH) { $env:AIOS_MODEL_PATH } else { "models\hrm-tiny" }),
    [string]$BindHost = "0.0.0.0",
    [int]$Port = 8000,
    [string]$Device = $(if ($env:AIOS_DEVICE) { $env:AIOS_DEVICE } else { "auto" }),
    [Parameter(ValueFromRemainingArguments = $true)][string[]]$Rest
)
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..")
$py = if (Test-Path ".venv\Scripts\python.exe") { ".venv\Scripts\python.exe" } else { "python" }
& $py -m hrm.server --model-path $ModelPath --host $BindHost --port $Port --device $Device @Rest
exit $LASTEXITCODE
