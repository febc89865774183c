package tpcc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
)

// Summary is what a tpcc run adds to the summary (docs/json-summary.md).
type Summary struct {
	VUsers        int     `json:"vusers"`
	Warehouses    int     `json:"warehouses"`
	Mode          string  `json:"mode"`
	Isolation     string  `json:"isolation"`
	AllWarehouses bool    `json:"all_warehouses"`
	KeyingThink   bool    `json:"keying_think"`
	NOPM          float64 `json:"nopm"`
	// NOPMDatabase is HammerDB's NOPM: the growth of sum(d_next_o_id) over
	// the measured interval, per minute. It and TPM are nil (null) when
	// they could not be measured; Unknown then says why, by field name.
	NOPMDatabase   *float64          `json:"nopm_database"`
	TPM            *float64          `json:"tpm"`
	Unknown        map[string]string `json:"unknown,omitempty"`
	NOPMCheck      *NOPMCheck        `json:"nopm_check,omitempty"`
	PerTransaction []TxnStats        `json:"per_transaction"`
	Audits         []AuditResult     `json:"audits,omitempty"`
}

// NOPMCheck compares the driver's committed New-Orders with the database.
type NOPMCheck struct {
	DriverCommitted int64 `json:"driver_committed"`
	DatabaseGrowth  int64 `json:"database_growth"`
	Ambiguous       int64 `json:"ambiguous"`
	Passed          bool  `json:"passed"`
	// NotRun: the database could not be read after the run, so the
	// cross-check could not be made (Passed is false).
	NotRun bool   `json:"not_run,omitempty"`
	Detail string `json:"detail"`
	// Before and After are sum(d_next_o_id) before and after the run: a
	// shard's (whose growth includes every shard's New-Orders) are kept
	// for the merge, which makes the cross-check of the whole run.
	Before int64 `json:"before,omitempty"`
	After  int64 `json:"after,omitempty"`
}

// TxnStats is the time profile of one transaction type (HammerDB's set).
type TxnStats struct {
	Op       string  `json:"op"`
	Count    int64   `json:"count"`
	MinMs    float64 `json:"min_ms"`
	AvgMs    float64 `json:"avg_ms"`
	MaxMs    float64 `json:"max_ms"`
	StdDevMs float64 `json:"stddev_ms"`
	P50Ms    float64 `json:"p50_ms"`
	P90Ms    float64 `json:"p90_ms"`
	P95Ms    float64 `json:"p95_ms"`
	P99Ms    float64 `json:"p99_ms"`
	TotalS   float64 `json:"total_s"`
}

// NewExtra decodes a tpcc summary's own fields.
func (Workload) NewExtra() results.Extra { return &Summary{} }

func extraOf(s *results.Summary) *Summary { return results.ExtraAs[Summary](s) }

// Brief is the one-line result: virtual users, NOPM, TPM, errors.
func (Workload) Brief(s *results.Summary) string {
	x := extraOf(s)
	var errs int64
	if s.Measured != nil {
		errs = s.Errors
	}
	return "vusers " + strconv.Itoa(x.VUsers) + ", NOPM " + strconv.FormatFloat(x.NOPM, 'f', 0, 64) +
		", TPM " + figure(x.TPM) + ", errors " + strconv.FormatInt(errs, 10)
}

// figure is a per-minute figure that may be unknown.
func figure(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

// Show is NOPM and TPM, the cross-check, the time profile, the outcomes
// and the audits.
func (Workload) Show(s *results.Summary) []results.Block {
	x := extraOf(s)
	var dur float64
	if s.Measured != nil {
		dur = s.DurationS
	}
	out := []results.Block{results.Line(fmt.Sprintf("NOPM %.0f  TPM %s  (%d virtual users, %d warehouses, %s mode, %.1f s measured)",
		x.NOPM, figure(x.TPM), x.VUsers, x.Warehouses, x.Mode, dur))}
	switch t, n := x.Unknown["tpm"], x.Unknown["nopm_database"]; {
	case t != "" && t == n:
		out = append(out, results.Line("tpm and nopm_database unknown: "+t))
	default:
		if t != "" {
			out = append(out, results.Line("tpm unknown: "+t))
		}
		if n != "" {
			out = append(out, results.Line("nopm_database unknown: "+n))
		}
	}
	if x.NOPMCheck != nil {
		out = append(out, results.Line("NOPM cross-check: "+x.NOPMCheck.Detail))
	}
	out = append(out, results.Line(""), results.TableBlock(txnTable(x.PerTransaction)), results.Line(""))
	out = append(out, results.OutcomeLines(s)...)
	if len(x.Audits) > 0 {
		out = append(out, results.Line("audits (clause 9.2 ranges):"))
		out = append(out, auditBlocks(x.Audits)...)
	}
	return out
}

// CheckView is the consistency conditions checked after the run.
func (Workload) CheckView(s *results.Summary) []results.Block {
	var rep CheckReport
	if s.Measured == nil || len(s.Check) == 0 || json.Unmarshal(s.Check, &rep) != nil || len(rep.Conditions) == 0 {
		return nil
	}
	return append([]results.Block{results.Line("consistency conditions:")}, checkBlocks(rep)...)
}

// Tick is the live line: NOPM and TPM of the interval from the driver's
// counts (the final TPM comes from pg_stat_database), New-Order p95.
func (Workload) Tick(tk run.Tick, span float64) string {
	no := tk.Ops[OpNewOrder]
	var completed int64
	for _, o := range tk.Ops {
		completed += o.Completed
	}
	phase := ""
	if tk.Phase != run.PhaseMeasure {
		phase = " (" + tk.Phase + ")"
	}
	return fmt.Sprintf("progress: %6.1f s, NOPM %8.0f, TPM %8.0f, new-order p95 %7.3f ms, errors %d%s",
		tk.T, float64(no.Committed)*60/span, float64(completed)*60/span, no.P95Ms, tk.Errors, phase)
}

// LiveHeadline is NOPM over one tick for the live view: the tick's
// committed New-Orders per minute, the final figure's formula over a
// shorter window (and over the warm-up too, where the final one does not
// count).
func (Workload) LiveHeadline(tk run.Tick, span float64) (float64, bool) {
	if span <= 0 {
		return 0, false
	}
	return float64(tk.Ops[OpNewOrder].Committed) * 60 / span, true
}

func txnTable(rows []TxnStats) *results.Table {
	t := &results.Table{Columns: []string{"transaction", "count", "min ms", "avg ms", "max ms", "stddev", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "total s"}}
	f3 := results.F3
	for _, r := range rows {
		t.Row(r.Op, fmt.Sprint(r.Count), f3(r.MinMs), f3(r.AvgMs), f3(r.MaxMs), f3(r.StdDevMs), f3(r.P50Ms), f3(r.P90Ms), f3(r.P95Ms), f3(r.P99Ms), fmt.Sprintf("%.1f", r.TotalS))
	}
	return t
}

func auditBlocks(audits []AuditResult) []results.Block {
	var out []results.Block
	for _, a := range audits {
		mark := "PASS"
		switch {
		case a.Status == AuditTooFew || a.Status == AuditNotApplicable:
			mark = "----"
		case !a.Passed:
			mark = "FAIL"
		}
		line := fmt.Sprintf("  %-4s %-26s %8.3f %-5s (spec %g..%g, %d samples)", mark, a.Name, a.Value, a.Unit, a.Min, a.Max, a.Samples)
		if a.Note != "" {
			line += " - " + a.Note
		}
		out = append(out, results.Line(line))
	}
	return out
}

// checkBlocks is one line per condition, then the total.
func checkBlocks(rep CheckReport) []results.Block {
	var out []results.Block
	for _, c := range rep.Conditions {
		mark := "PASS"
		if !c.Passed {
			mark = "FAIL"
		}
		detail := ""
		switch {
		case c.Error != "":
			detail = "  error: " + c.Error
		case c.Violations > 0:
			detail = fmt.Sprintf("  %d %s violate it, e.g. %s", c.Violations, c.Unit, strings.Join(c.Examples, "; "))
		}
		out = append(out, results.Line(fmt.Sprintf("  %s %2d %-10s %-66s %6.2f s%s", mark, c.Number, "("+c.Clause+")", c.Name, c.Seconds, detail)))
	}
	verdict := "all passed"
	if !rep.Passed {
		verdict = "FAILED: condition " + joinInts(rep.Failed())
	}
	out = append(out, results.Line(fmt.Sprintf("  %d conditions in %.2f s: %s", len(rep.Conditions), rep.Seconds, verdict)))
	return out
}
