package proc

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestStatSelf: this process's state, parent and start time (the parser
// is machine.ParseProcStat's, tested there).
func TestStatSelf(t *testing.T) {
	state, ppid, start := Stat(os.Getpid())
	if (state != 'R' && state != 'S') || ppid != os.Getppid() || start == 0 {
		t.Errorf("state %c, ppid %d (want %d), start %d", state, ppid, os.Getppid(), start)
	}
	if s, p, st := Stat(-1); s != 0 || p != 0 || st != 0 {
		t.Errorf("no such process: %c %d %d", s, p, st)
	}
}

func TestAliveSelfAndOthers(t *testing.T) {
	me := os.Getpid()
	if !Alive(me, Start(me)) || Start(me) == 0 {
		t.Fatal("this process is not alive")
	}
	if Alive(me, Start(me)+1) {
		t.Error("another start time is another process")
	}
	if Exists(-1) || Alive(0, 0) {
		t.Error("no pid")
	}
}

// TestTerminateUnder: a shell working in a directory, with a child, is
// found by Under, its root is the shell, and Terminate ends both.
func TestTerminateUnder(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill() })
	var pids []int
	for range 100 {
		if pids = Under(dir); len(pids) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(pids) != 2 || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("Under(%s) = %v, want the shell %d and its sleep", dir, pids, cmd.Process.Pid)
	}
	if r := Roots(pids); len(r) != 1 || r[0] != cmd.Process.Pid {
		t.Errorf("roots %v", r)
	}
	// The shell ends on SIGTERM; its sleep, left without its parent, is
	// asked next.
	left := Terminate(context.Background(), pids, 5*time.Second)
	<-done
	if len(left) != 0 {
		t.Fatalf("still running: %v", left)
	}
	if p := Under(dir); len(p) != 0 {
		t.Errorf("still under %s: %v", dir, p)
	}
}
