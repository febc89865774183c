package report

import (
	"encoding/json"
	"testing"

	"github.com/tunebench/tunebench/internal/store"
)

// TestRunRowErrors: the run table's errors are the executor's errors, and
// for a query run (tpch, whose summary has query_errors and timed_out
// instead) its failed and timed-out queries.
func TestRunRowErrors(t *testing.T) {
	for _, c := range []struct {
		summary string
		want    string
	}{
		{`{"errors": 4}`, "4"},
		{`{"query_errors": 2, "timed_out": 1}`, "3"},
		{`{"query_errors": 0, "timed_out": 0}`, "0"},
	} {
		rd := &runData{Run: &store.Run{}, Kind: kindDB, v: newViews(nil)}
		if err := json.Unmarshal([]byte(c.summary), &rd.Sum); err != nil {
			t.Fatal(err)
		}
		if got := runRowOf(rd).Errors; got != c.want {
			t.Errorf("%s: errors %q, want %q", c.summary, got, c.want)
		}
	}
}
