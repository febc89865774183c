package tpcb

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload"
)

// Summary is what a tpcb run adds to the summary: a writing shard's
// history counts (docs/json-summary.md); nothing for a whole run.
type Summary struct {
	ShardHistory *HistoryGrowth `json:"shard_history,omitempty"`
	// HistoryCheck is a merged run's cross-check of the history's growth
	// against what its shards committed.
	HistoryCheck *HistoryCheck `json:"history_check,omitempty"`
}

// HistoryGrowth is pgbench_history's row count before and after a shard's
// run, and what the shard committed (and left ambiguous) over the whole run.
type HistoryGrowth struct {
	Before    int64 `json:"before"`
	After     int64 `json:"after"`
	Committed int64 `json:"committed"`
	Ambiguous int64 `json:"ambiguous"`
	// NotRead says why After could not be read (then it is 0).
	NotRead string `json:"not_read,omitempty"`
}

// HistoryCheck is the merge's cross-check: pgbench_history grew from the
// first shard's count before to the last one's after, by what the shards
// committed, up to their ambiguous commits.
type HistoryCheck struct {
	Grown     int64  `json:"grown"`
	Committed int64  `json:"committed"`
	Ambiguous int64  `json:"ambiguous"`
	Passed    bool   `json:"passed"`
	NotRun    bool   `json:"not_run,omitempty"`
	Detail    string `json:"detail"`
}

// NewExtra decodes tpcb's own summary fields.
func (Workload) NewExtra() results.Extra { return &Summary{} }

// Brief is the one-line result: clients, tps, p95, errors.
func (Workload) Brief(s *results.Summary) string { return results.BriefTPS(s) }

// Show is the run's table and its outcomes.
func (Workload) Show(s *results.Summary) []results.Block {
	out := []results.Block{results.TableBlock(results.RunTable([]*results.Summary{s}))}
	if x := results.ExtraAs[Summary](s); x.HistoryCheck != nil {
		out = append(out, results.Line("history cross-check: "+x.HistoryCheck.Detail))
	}
	return append(out, results.OutcomeLines(s)...)
}

// CheckView is the balance check run after the run.
func (Workload) CheckView(s *results.Summary) []results.Block {
	var rep CheckReport
	if s.Measured == nil || len(s.Check) == 0 || json.Unmarshal(s.Check, &rep) != nil || len(rep.Conditions) == 0 {
		return nil
	}
	return append([]results.Block{results.Line("check:")}, checkBlocks(rep)...)
}

// checkBlocks is one line per condition.
func checkBlocks(rep CheckReport) []results.Block {
	var out []results.Block
	for _, c := range rep.Conditions {
		mark := "PASS"
		switch {
		case c.Skipped:
			mark = "SKIP"
		case !c.Passed:
			mark = "FAIL"
		}
		out = append(out, results.Line(fmt.Sprintf("  %-4s %-15s %s (%.2f s)", mark, c.Name, c.Detail, c.Seconds)))
	}
	return out
}

// loadLine is the load's result line, with pgbench -i's phases.
func loadLine(st LoadStats) string {
	return fmt.Sprintf("done in %.2f s (drop %.2f s, create %.2f s, generate %.2f s, vacuum %.2f s, primary keys %.2f s); %d rows, %s rows/s",
		st.Total.Seconds(), st.Drop.Seconds(), st.Create.Seconds(), st.Generate.Seconds(), st.Vacuum.Seconds(), st.PrimaryKeys.Seconds(),
		st.Rows, results.Human(float64(st.Rows)/st.Total.Seconds()))
}

// MergeShards cross-checks the history's growth over the merged run: from
// the smallest count before (read before any shard's first transaction,
// when the shards met) to the largest after (read after every shard's
// last), against what all of them committed.
func (Workload) MergeShards(in *workload.MergeInput) (*workload.Verdict, error) {
	v := &workload.Verdict{}
	var hc HistoryCheck
	var before, after int64
	n := 0
	for i, p := range in.Parts {
		if p == nil {
			continue
		}
		hg := results.ExtraAs[Summary](p).ShardHistory
		if hg == nil {
			continue // a select-only shard, or one from before the counts
		}
		if hg.NotRead != "" {
			hc.NotRun, hc.Detail = true, fmt.Sprintf("NOT RUN: shard %d/%d %s", i, len(in.Parts), hg.NotRead)
		}
		if n == 0 || hg.Before < before {
			before = hg.Before
		}
		after = max(after, hg.After)
		hc.Committed += hg.Committed
		hc.Ambiguous += hg.Ambiguous
		n++
	}
	if n == 0 {
		return v, nil // nothing written: nothing to check
	}
	hc.Grown = after - before
	switch {
	case hc.NotRun:
	case n < len(in.Parts):
		hc.NotRun, hc.Detail = true, fmt.Sprintf("NOT RUN: %d of %d shards gave their history counts (a shard missing or failed)", n, len(in.Parts))
	case !in.Met:
		hc.NotRun, hc.Detail = true, "NOT RUN: the shards did not meet at a rendezvous, so one shard's count before may include another's transactions"
	default:
		hc.Passed = hc.Grown >= hc.Committed && hc.Grown <= hc.Committed+hc.Ambiguous
		word := "MISMATCH: "
		if hc.Passed {
			word = ""
		}
		hc.Detail = fmt.Sprintf("%shistory grew by %d rows; the %d shards committed %d writing transactions (+ up to %d ambiguous commits)",
			word, hc.Grown, n, hc.Committed, hc.Ambiguous)
	}
	switch {
	case hc.NotRun:
		v.NotRun = append(v.NotRun, "the history cross-check: "+strings.TrimPrefix(hc.Detail, "NOT RUN: "))
	case !hc.Passed:
		v.Failures = append(v.Failures, workload.Failure{What: "history cross-check", Detail: hc.Detail,
			Hint: "the shards' committed transactions and pgbench_history's growth disagree: something else wrote to the database during the run, or a driver or database bug"})
	}
	v.Extra = &Summary{HistoryCheck: &hc}
	return v, nil
}
