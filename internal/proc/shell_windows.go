//go:build windows

package proc

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// Shell is a command that runs line through cmd.exe (%ComSpec%), as
// pgbench's system() does on Windows. On cancel the shell and every
// process it started are ended (taskkill /T /F), not the shell alone.
func Shell(ctx context.Context, line string) *exec.Cmd {
	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = `C:\Windows\System32\cmd.exe`
	}
	cmd := exec.CommandContext(ctx, comspec)
	// cmd.exe parses its command line itself: the line goes as written,
	// after the program's own name.
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: syscall.EscapeArg(comspec) + ` /d /s /c "` + line + `"`}
	cmd.Cancel = func() error {
		kill := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid))
		if err := kill.Run(); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	return cmd
}
