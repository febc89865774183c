package server

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/proc"
)

// A holder killed -9 whose parent never reaps it stays a zombie: kill(pid, 0)
// still succeeds, yet it holds nothing any more.
func TestHolderAlive(t *testing.T) {
	me := self()
	if !me.Alive() || me.Start == 0 {
		t.Fatalf("this process is not alive as a holder: %+v", me)
	}
	if (&Holder{PID: me.PID, Start: me.Start + 1}).Alive() {
		t.Errorf("a reused pid (another start time) counts as the holder")
	}
	var none *Holder
	if !none.Alive() {
		t.Errorf("the server's lifetime holder is never a leftover")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	h := &Holder{PID: cmd.Process.Pid, Start: proc.Start(cmd.Process.Pid)}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if state, _, _ := proc.Stat(h.PID); state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.Alive() {
		t.Errorf("a zombie holder counts as alive")
	}
	if !h.Same(&Holder{PID: h.PID}) || h.Same(&Holder{PID: os.Getpid()}) {
		t.Errorf("Same")
	}
}

// A run's change above a server-lifetime one is a separate journal entry,
// and restoring the run's entry leaves the lifetime one.
func TestMergeAppliedStacksHolders(t *testing.T) {
	life := Applied{Name: "work_mem", Value: "8MB", Previous: "4MB"}
	run := Applied{Name: "work_mem", Value: "16MB", Previous: "8MB", HadAuto: true, AutoPrevious: "8MB", Holder: &Holder{PID: 42}}
	j := mergeApplied([]Applied{life}, []Applied{run})
	if len(j) != 2 {
		t.Fatalf("journal %+v", j)
	}
	again := run
	again.Value, again.Previous = "32MB", "16MB"
	if j = mergeApplied(j, []Applied{again}); len(j) != 2 || j[1].Value != "32MB" || j[1].Previous != "8MB" {
		t.Errorf("the same holder applying again: %+v", j)
	}
	if left := without(j, j[1:]); len(left) != 1 || left[0].Holder != nil {
		t.Errorf("without the run's entry: %+v", left)
	}
}
