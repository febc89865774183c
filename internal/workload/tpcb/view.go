package tpcb

import (
	"encoding/json"
	"fmt"

	"github.com/tunebench/tunebench/internal/results"
)

// NewExtra: tpcb adds no fields of its own to the summary.
func (Workload) NewExtra() results.Extra { return nil }

// Brief is the one-line result: clients, tps, p95, errors.
func (Workload) Brief(s *results.Summary) string { return results.BriefTPS(s) }

// Show is the run's table and its outcomes.
func (Workload) Show(s *results.Summary) []results.Block {
	out := []results.Block{results.TableBlock(results.RunTable([]*results.Summary{s}))}
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
