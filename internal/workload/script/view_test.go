package script

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// TestSectionAcrossRuns: runs of the same statements get a table of each
// statement's p95 side by side, each column naming the run, its clients
// and its -D values; runs of other statements get none.
func TestSectionAcrossRuns(t *testing.T) {
	mk := func(id int64, clients int, defines []string, p95s ...float64) *results.Run {
		x := &Summary{Scripts: []ScriptResult{{Name: "z.sql", Weight: 1}}}
		for i, v := range p95s {
			x.Scripts[0].Statements = append(x.Scripts[0].Statements, StmtResult{Line: 10 + i, Command: "SELECT " + strings.Repeat("x", i+1), LatencyMs: results.Latency{P95: v}})
		}
		pj, err := json.Marshal(params{Defines: defines})
		if err != nil {
			t.Fatal(err)
		}
		return &results.Run{Run: &store.Run{ID: id, Params: pj}, Summary: &results.Summary{Measured: &results.Measured{Clients: clients}, Extra: x}}
	}
	sec, err := Workload{}.Section([]*results.Run{mk(1, 4, []string{"skew=1.01"}, 0.5, 0.25), mk(2, 16, []string{"skew=1.5"}, 9, 1.5)})
	if err != nil || sec == nil || len(sec.Tables) != 1 || len(sec.Runs) != 2 {
		t.Fatalf("section %+v, %v", sec, err)
	}
	tb := sec.Tables[0]
	if got := strings.Join(tb.Columns, "|"); got != "script|line|command|run 1, 4 clients, skew=1.01|run 2, 16 clients, skew=1.5" {
		t.Errorf("columns %s", got)
	}
	if len(tb.Rows) != 2 || strings.Join(tb.Rows[0], "|") != "z.sql|10|SELECT x|0.500|9.000" || tb.Rows[1][4] != "1.500" {
		t.Errorf("rows %q", tb.Rows)
	}
	sec, _ = Workload{}.Section([]*results.Run{mk(1, 4, nil, 0.5), mk(2, 4, nil, 0.5, 0.7)})
	if len(sec.Tables) != 0 {
		t.Errorf("runs of different statements side by side: %+v", sec.Tables)
	}
}
