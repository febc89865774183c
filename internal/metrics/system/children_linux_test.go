//go:build linux

package system

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
)

// TestChildrenLive: on this kernel the children lists name the same
// processes as the scan of /proc: this test's own two child processes.
func TestChildrenLive(t *testing.T) {
	me := os.Getpid()
	if _, err := os.Stat("/proc/" + strconv.Itoa(me) + "/task/" + strconv.Itoa(me) + "/children"); err != nil {
		t.Skip("no children lists on this kernel:", err)
	}
	var kids []int
	for range 2 {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
		kids = append(kids, c.Process.Pid)
	}
	var r procReader
	listed, ok := r.children("/proc", me, nil)
	if !ok {
		t.Fatal("children lists not read")
	}
	scanned, err := r.scanChildren("/proc", me, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(scanned)
	for _, k := range kids {
		if !slices.Contains(listed, k) {
			t.Errorf("child %d not in the lists %v", k, listed)
		}
	}
	if !slices.Equal(listed, scanned) {
		t.Errorf("lists %v, scan %v", listed, scanned)
	}
}
