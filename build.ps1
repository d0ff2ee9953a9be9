#!/usr/bin/env pwsh
# Contend's entry point for PowerShell users: forwards every verb to build/Build.cs, which
# holds the logic (PowerShell is not available as a dotnet tool from the project's NuGet
# copy, so the logic lives where the .NET SDK alone can run it; docs/toolchain.md).
#   ./build.ps1 demo    ./build.ps1 test    ./build.ps1 help
dotnet run "$PSScriptRoot/build/Build.cs" -- @args
exit $LASTEXITCODE
