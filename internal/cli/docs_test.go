package cli_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOptionsDoc: docs/options.md is what the workloads declare. Run the
// test with TUNEBENCH_UPDATE_DOCS=1 to rewrite it.
func TestOptionsDoc(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.must(0, "workloads", "--markdown")
	path := filepath.Join("..", "..", "docs", "options.md")
	if os.Getenv("TUNEBENCH_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != r.stdout {
		t.Errorf("docs/options.md is out of date: run TUNEBENCH_UPDATE_DOCS=1 go test -run TestOptionsDoc ./internal/cli")
	}
}
