package cli_test

import (
	"strings"
	"testing"
)

// TestResultsPathFromState: the default results store comes from the State's
// environment ($TUNEBENCH_RESULTS), not from the process environment, so
// that everything the commands read from the outside goes through State.
// (Not parallel: it sets a decoy in the process environment.)
func TestResultsPathFromState(t *testing.T) {
	h := newHarness(t)
	want := tempPath(t, "state.db")
	decoy := tempPath(t, "process.db")
	h.env["TUNEBENCH_RESULTS"] = want
	h.env["HOME"] = t.TempDir()
	t.Setenv("TUNEBENCH_RESULTS", decoy)
	r := h.must(0, "results", "list")
	if !strings.Contains(r.stdout, want) {
		t.Errorf("results list used another store than $TUNEBENCH_RESULTS of the State (%s):\n%s", want, r)
	}
}

// TestVersionAndWorkloads covers the two trivial commands.
func TestVersionAndWorkloads(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if r := h.must(0, "version"); !strings.HasPrefix(r.stdout, "tunebench ") {
		t.Errorf("version:\n%s", r)
	}
	if r := h.must(0, "workloads"); !strings.Contains(r.stdout, "tpcb") {
		t.Errorf("workloads:\n%s", r)
	}
	if r := h.run("no-such-command"); r.code != 2 || !strings.HasPrefix(r.stderr, "error: ") {
		t.Errorf("unknown command: want exit 2 and an error line:\n%s", r)
	}
}
