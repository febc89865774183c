package script

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/results"
)

// Summary is what a script run adds to the summary (docs/json-summary.md):
// each script's results and each of its statements'.
type Summary struct {
	ScaleFrom string         `json:"scale_from,omitempty"`
	Scripts   []ScriptResult `json:"scripts"`
}

// ScriptResult is one script over the measured window: its committed
// transactions and their latency (as the run's, from the step's start or
// the scheduled start), and its transactions that ended in errors.
type ScriptResult struct {
	Name         string          `json:"name"`
	File         string          `json:"file"`
	Weight       int             `json:"weight"`
	Transactions int64           `json:"transactions"`
	TPS          float64         `json:"tps"`
	Errors       int64           `json:"errors"`
	LatencyMs    results.Latency `json:"latency_ms"`
	Statements   []StmtResult    `json:"statements"`
	// StatementsNotKept: the script's SQL commands, when the scripts have
	// too many for per-command results (Statements is then empty).
	StatementsNotKept int `json:"statements_not_kept,omitempty"`
}

// StmtResult is one SQL command of a script: the round trips it was in
// (count), their latency from the send to the reply read, and its errors by
// SQLSTATE (a round trip's error counts for its first statement).
type StmtResult struct {
	Line             int              `json:"line"`
	Command          string           `json:"command"`
	Count            int64            `json:"count"`
	Errors           int64            `json:"errors"`
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
	LatencyMs        results.Latency  `json:"latency_ms"`
}

// NewExtra decodes a script run's own fields.
func (Workload) NewExtra() results.Extra { return &Summary{} }

func extraOf(s *results.Summary) *Summary { return results.ExtraAs[Summary](s) }

// Brief is the one-line result: clients, tps, p95, errors.
func (Workload) Brief(s *results.Summary) string { return results.BriefTPS(s) }

// Show is the run's table, its outcomes, and the scripts' and statements'
// tables.
func (Workload) Show(s *results.Summary) []results.Block {
	out := []results.Block{results.TableBlock(results.RunTable([]*results.Summary{s}))}
	out = append(out, results.OutcomeLines(s)...)
	x := extraOf(s)
	if len(x.Scripts) == 0 {
		return out
	}
	st := scriptTable(x)
	out = append(out, results.Line("per script:"), results.TableBlock(&st))
	for _, t := range stmtTables(x) {
		out = append(out, results.Line(t.Name+":"), results.TableBlock(&t))
	}
	for _, sr := range x.Scripts {
		if n := notKept(sr); n != "" {
			out = append(out, results.Line(n))
		}
	}
	return out
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// scriptTable has a row per script.
func scriptTable(x *Summary) results.Table {
	t := results.Table{Left: 1, Columns: []string{"script", "weight", "transactions", "tps", "avg ms", "p50", "p95", "p99", "max", "errors"}}
	for _, s := range x.Scripts {
		l := s.LatencyMs
		t.Row(s.Name, strconv.Itoa(s.Weight), strconv.FormatInt(s.Transactions, 10), strconv.FormatFloat(s.TPS, 'f', 1, 64),
			ms(l.Avg), ms(l.P50), ms(l.P95), ms(l.P99), ms(l.Max), strconv.FormatInt(s.Errors, 10))
	}
	return t
}

// notKept says why a script has no per-statement results ("" when it
// has them).
func notKept(s ScriptResult) string {
	if s.StatementsNotKept == 0 {
		return ""
	}
	return fmt.Sprintf("statements of %s: not kept: the scripts have more than %d SQL commands (this one %d), so only the transactions' figures are kept",
		s.Name, maxStmtResults, s.StatementsNotKept)
}

// stmtTables has a table per script, a row per statement.
func stmtTables(x *Summary) []results.Table {
	var out []results.Table
	for _, s := range x.Scripts {
		if s.StatementsNotKept > 0 {
			continue // notKept
		}
		t := results.Table{Name: "statements of " + s.Name, Left: 2, Columns: []string{"line", "command", "count", "avg ms", "p50", "p95", "p99", "max", "errors"}}
		for _, st := range s.Statements {
			l := st.LatencyMs
			t.Row(strconv.Itoa(st.Line), oneLine(st.Command, 60), strconv.FormatInt(st.Count, 10),
				ms(l.Avg), ms(l.P50), ms(l.P95), ms(l.P99), ms(l.Max), errText(st))
		}
		out = append(out, t)
	}
	return out
}

// errText is a statement's errors with their SQLSTATEs.
func errText(st StmtResult) string {
	if st.Errors == 0 {
		return "0"
	}
	keys := make([]string, 0, len(st.ErrorsBySQLState))
	for k := range st.ErrorsBySQLState {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, st.ErrorsBySQLState[k])
	}
	return fmt.Sprintf("%d (%s)", st.Errors, strings.Join(parts, ", "))
}

// Section is the workload's part of the report: per run, each script's
// and each statement's latency.
func (Workload) Section(runs []*results.Run) (*results.Section, error) {
	v := &results.Section{ID: "script", Title: "Script runs (pgbench script files)",
		Intro: "Each statement's p95 latency side by side when the runs ran the same statements; then per run each script's committed transactions and latency, and each statement's round trips, latency from the send to the reply and errors by SQLSTATE, over the measured window."}
	for _, rd := range runs {
		if rd.Summary == nil {
			continue
		}
		x := extraOf(rd.Summary)
		if len(x.Scripts) == 0 {
			continue
		}
		rv := results.RunView{RunID: rd.ID}
		var files []string
		for _, s := range x.Scripts {
			files = append(files, s.File)
		}
		rv.Fields = append(rv.Fields, results.Field{K: "Files", V: strings.Join(files, ", ")})
		if rd.Summary.Measured != nil {
			rv.Fields = append(rv.Fields, results.Field{K: "Scale", V: fmt.Sprintf("%d (%s)", rd.Summary.Scale, scaleFrom(x.ScaleFrom))})
		}
		st := scriptTable(x)
		st.Name = "Scripts"
		rv.Tables = append(rv.Tables, st)
		rv.Tables = append(rv.Tables, stmtTables(x)...)
		for _, sr := range x.Scripts {
			if n := notKept(sr); n != "" {
				rv.Note = strings.TrimSpace(rv.Note + " " + n + ".")
			}
		}
		v.Runs = append(v.Runs, rv)
	}
	if len(v.Runs) == 0 {
		return nil, nil
	}
	if t, ok := acrossRuns(runs); ok {
		v.Tables = append(v.Tables, t)
	}
	return v, nil
}

// acrossRuns is a table of each statement's p95 latency in every run, when
// two or more runs ran the same statements (an experiment's
// configurations side by side); each column names the run, its clients and
// its -D values.
func acrossRuns(runs []*results.Run) (results.Table, bool) {
	type col struct {
		label string
		x     *Summary
	}
	var cols []col
	key := func(x *Summary) string {
		var b strings.Builder
		for _, s := range x.Scripts {
			for _, st := range s.Statements {
				fmt.Fprintf(&b, "%s:%d:%s\n", s.Name, st.Line, st.Command)
			}
		}
		return b.String()
	}
	var want string
	for _, rd := range runs {
		if rd.Summary == nil || rd.Summary.Measured == nil {
			continue
		}
		x := extraOf(rd.Summary)
		if len(x.Scripts) == 0 {
			continue
		}
		if k := key(x); want == "" {
			want = k
		} else if k != want {
			return results.Table{}, false
		}
		label := fmt.Sprintf("run %d, %d clients", rd.ID, rd.Summary.Clients)
		var p params
		if json.Unmarshal(rd.Run.Params, &p) == nil && len(p.Defines) > 0 {
			label += ", " + strings.Join(p.Defines, " ")
		}
		cols = append(cols, col{label, x})
	}
	if len(cols) < 2 {
		return results.Table{}, false
	}
	t := results.Table{Name: "p95 latency of each statement (ms), by run", Left: 3, Columns: []string{"script", "line", "command"}}
	for _, c := range cols {
		t.Columns = append(t.Columns, c.label)
	}
	for si, s := range cols[0].x.Scripts {
		for sti, st := range s.Statements {
			row := []string{s.Name, strconv.Itoa(st.Line), oneLine(st.Command, 50)}
			for _, c := range cols {
				row = append(row, ms(c.x.Scripts[si].Statements[sti].LatencyMs.P95))
			}
			t.Row(row...)
		}
	}
	return t, true
}

func scaleFrom(s string) string {
	switch s {
	case "option":
		return "--scale"
	case "define":
		return "-D scale"
	case "pgbench_branches":
		return "rows of pgbench_branches"
	}
	return "no pgbench_branches: 1"
}
