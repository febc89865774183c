package testutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SetHolder rewrites the settings journal in a managed server dir's
// server.json so that setting name is held by pid: a dead pid (DeadPID) is
// as if the process that applied it had been killed -9.
func SetHolder(tb testing.TB, dir, name string, pid int) {
	tb.Helper()
	path := filepath.Join(dir, "server.json")
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		tb.Fatal(err)
	}
	found := false
	list, _ := st["applied"].([]any)
	for _, a := range list {
		if m, ok := a.(map[string]any); ok && m["name"] == name {
			m["holder"] = map[string]any{"pid": pid, "what": "tunebench run tpcb"}
			found = true
		}
	}
	if !found {
		tb.Fatalf("%s is not journaled in %s", name, b)
	}
	if b, err = json.Marshal(st); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// DeadPID returns the pid of a process that has exited.
func DeadPID(tb testing.TB) int {
	tb.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		tb.Fatal(err)
	}
	return cmd.Process.Pid
}
