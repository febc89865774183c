//go:build linux

package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestClaimSubnet: two claims get different subnets while both are held,
// the lock files are gone once they are let go, and a lock on a file whose
// holder removed it does not count.
func TestClaimSubnet(t *testing.T) {
	lock := func(k int) string { return filepath.Join(os.TempDir(), fmt.Sprintf("tunebench-netns-%d.lock", k)) }
	k1, unlock1 := claimSubnet(t, 240)
	k2, unlock2 := claimSubnet(t, 240)
	if k1 == k2 {
		t.Fatalf("two claims held at once both got subnet %d", k1)
	}
	for _, k := range []int{k1, k2} {
		if _, err := os.Stat(lock(k)); err != nil {
			t.Errorf("subnet %d is held but its lock file is not there: %v", k, err)
		}
	}
	unlock1()
	unlock2()
	for _, k := range []int{k1, k2} {
		if _, err := os.Stat(lock(k)); !os.IsNotExist(err) {
			t.Errorf("lock file of subnet %d left behind (%v)", k, err)
		}
	}

	f, err := os.CreateTemp(t.TempDir(), "lock")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !isFileAt(f, f.Name()) {
		t.Fatal("isFileAt: a file open at its own path is not there")
	}
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	if isFileAt(f, f.Name()) {
		t.Error("isFileAt: a removed file still counts")
	}
	g, err := os.Create(f.Name()) // another file at the same path
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if isFileAt(f, f.Name()) {
		t.Error("isFileAt: a new file at the path counts as the removed one")
	}
}
