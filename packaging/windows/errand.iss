; Inno Setup script: turns dist\errand\ (built with packaging\errand-windows.spec) into ErrandSetup.exe, a
; per-user installer (no administrator rights) with a Start-menu shortcut. Uninstalling removes the program
; and the shortcut only: data in %LOCALAPPDATA%\Errand and keys in the Credential Manager stay.
; Build:  iscc /DAppVersion=0.1.0 packaging\windows\errand.iss
#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif

[Setup]
AppId={{8D3F4C2E-5B7A-4E19-9C61-2A0F7E4B9D13}
AppName=Errand
AppVersion={#AppVersion}
AppPublisher=Errand
DefaultDirName={localappdata}\Programs\Errand
DefaultGroupName=Errand
PrivilegesRequired=lowest
OutputBaseFilename=ErrandSetup-{#AppVersion}
OutputDir=..\..\dist
Compression=lzma2
SolidCompression=yes
UninstallDisplayIcon={app}\errand.exe
WizardStyle=modern

[Files]
Source: "..\..\dist\errand\*"; DestDir: "{app}"; Flags: recursesubdirs ignoreversion

[Icons]
Name: "{group}\Errand"; Filename: "{app}\errand.exe"
Name: "{group}\Uninstall Errand"; Filename: "{uninstallexe}"

[Run]
Filename: "{app}\errand.exe"; Description: "Start Errand"; Flags: nowait postinstall skipifsilent

[UninstallRun]
; The app's own "start at login" value under HKCU\...\Run would point at a removed program: delete it.
Filename: "{cmd}"; Parameters: "/C reg delete HKCU\Software\Microsoft\Windows\CurrentVersion\Run /v Errand /f"; Flags: runhidden; RunOnceId: "RemoveRunKey"
