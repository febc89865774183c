package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
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

// TestManyOpsFolded: a workload of many transaction types (tpch's 22
// queries and 2 refreshes) gets one latency table and its charts folded
// away, not a section, chart and table each (issue 41 item 4); a few get
// a section each.
func TestManyOpsFolded(t *testing.T) {
	render := func(n int) string {
		g := groupView{XName: "streams"}
		for i := 0; i < n; i++ {
			g.Latency = append(g.Latency, latView{Op: fmt.Sprintf("Q%d", i+1), Chart: template.HTML("<svg class=\"chart\"></svg>"),
				Rows: []latRowView{{Config: "base", X: "1", N: 1, P95: "1.0"}}})
		}
		g.ManyOps = len(g.Latency) > manyOps
		var b strings.Builder
		if err := (&Report{Groups: []groupView{g}}).WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	many := render(24)
	if !strings.Contains(many, "<details><summary>Charts per transaction type (24)</summary>") || strings.Count(many, "<th>transaction type</th>") != 1 ||
		strings.Contains(many, "<h3>Q1</h3>") || strings.Count(many, "<td>Q") != 24 {
		t.Errorf("24 transaction types are not one table with folded charts")
	}
	few := render(5)
	if strings.Contains(few, "<details><summary>Charts per transaction type") || strings.Count(few, "<h3>Q") != 5 {
		t.Errorf("5 transaction types are not a section each")
	}
}
