package cli_test

import (
	"strings"
	"testing"
)

// --set of a setting the workload sets in its own sessions is refused
// before anything runs, pointing to the workload's option (issue 16, item
// 4: tpcc's workers SET default_transaction_isolation from --isolation, so
// the --set was silently overridden).
func TestSetOfGovernedSettingRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	r := h.must(2, "run", "tpcc", "--server-dir", srv.Dir(), "-d", "nodb", "--set", "default_transaction_isolation=serializable",
		"--results", tempPath(t, "r.db"))
	if !strings.Contains(r.stderr, "--set default_transaction_isolation would be overridden") || !strings.Contains(r.stderr, "give --isolation instead") {
		t.Errorf("a --set of default_transaction_isolation on tpcc:\n%s", r)
	}
}
