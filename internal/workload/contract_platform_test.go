package workload

import (
	"strings"
	"testing"
)

func TestCheckPlatform(t *testing.T) {
	m := Meta{Name: "fsblog", Platforms: []string{"linux", "darwin"}, PlatformsWhy: "renames over open files"}
	if err := m.CheckPlatform("linux"); err != nil {
		t.Errorf("linux: %v", err)
	}
	err := m.CheckPlatform("windows")
	if err == nil || !strings.Contains(err.Error(), "fsblog does not run on Windows: renames over open files") {
		t.Errorf("windows: %v", err)
	}
	if err := (Meta{Name: "tpcb"}).CheckPlatform("windows"); err != nil {
		t.Errorf("a workload for every platform: %v", err)
	}
}
