package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// A run's status says whether its figures can be taken as they are: ok;
// errors, with the reasons (results.Reason) — transactions that ended in
// errors, or reasons that put the figures in doubt: an outage over the
// run's threshold, checks that could not run (results.DoubtCodes);
// interrupted; failed. Runs in doubt are left out of the medians, bands and
// comparisons unless Options.IncludeErrors; interrupted and failed runs
// always. Every run whose status is not ok is marked in the run table, on
// the throughput chart and in the time series.

// statusBad reports whether a run's status is not ok.
func (rd *runData) statusBad() bool { return rd.Run.Status != store.StatusOK }

// inDoubt reports whether a run's figures are in doubt (results.InDoubt:
// status errors for an outage, checks that could not run or no transactions).
func (rd *runData) inDoubt() bool { return results.InDoubt(rd.Run.Status, rd.Reasons) }

// doubtText says what puts a run's figures in doubt.
func (rd *runData) doubtText() string { return reasonsText(results.Doubts(rd.Reasons)) }

// reasonText is how the report shows a reason: its detail, else its code.
func reasonText(r results.Reason) string {
	if r.Detail != "" {
		return r.Detail
	}
	return r.Code
}

func reasonsText(rs []results.Reason) string {
	ts := make([]string, len(rs))
	for i, r := range rs {
		ts[i] = reasonText(r)
	}
	return strings.Join(ts, "; ")
}

// statusWhy says why a run's status is not ok: the reasons its summary
// gives, else what the summary shows (errors, outages).
func (rd *runData) statusWhy() string {
	if len(rd.Reasons) > 0 {
		return reasonsText(rd.Reasons)
	}
	var parts []string
	if n := rd.Sum.Errors; n > 0 {
		s := fmtCount(n) + pluralOf(n, " error", " errors")
		if rd.Sum.ErrorsPct > 0 {
			s += fmt.Sprintf(" (%s%% of the transactions)", strconv.FormatFloat(rd.Sum.ErrorsPct, 'g', 3, 64))
		}
		parts = append(parts, s)
	}
	if len(rd.Sum.Outages) > 0 {
		parts = append(parts, outageTotal(rd))
	}
	if len(parts) == 0 {
		return "no reason recorded"
	}
	return strings.Join(parts, ", ")
}

// statusText is the status with its reason: "errors: outage 14.0 s (11.7%
// of the window)".
func (rd *runData) statusText() string {
	switch rd.Run.Status {
	case store.StatusOK:
		return rd.Run.Status
	case store.StatusErrors:
		return rd.Run.Status + ": " + rd.statusWhy()
	}
	return joinNonEmpty(": ", rd.Run.Status, reasonsText(rd.Reasons))
}

// outageLines describes each outage window of a run: "outage 6.0–20.0 s
// (1,234 connection errors)", at most maxLines of them and a line for the
// rest.
func outageLines(rd *runData, maxLines int) []string {
	var out []string
	for i, o := range rd.Sum.Outages {
		if i == maxLines && len(rd.Sum.Outages) > maxLines+1 {
			out = append(out, fmt.Sprintf("and %d more; %s", len(rd.Sum.Outages)-i, outageTotal(rd)))
			break
		}
		out = append(out, fmt.Sprintf("outage %s–%s s (%s connection %s)", fmtSec(o.StartS), fmtSec(o.EndS),
			fmtCount(o.Errors), pluralOf(o.Errors, "error", "errors")))
	}
	return out
}

// outageTotal is the outages' total time (results.OutageSeconds: their
// union in the measured window, as the run's status reason counts it), with
// its share of the window when the summary gives the window: "outage 14.0 s
// (11.7% of the window)".
func outageTotal(rd *runData) string {
	w := rd.Sum.DurationS
	total := results.OutageSeconds(rd.Sum.Outages, w)
	s := "outage " + fmtSec(total) + " s"
	if len(rd.Sum.Outages) > 1 {
		s = fmt.Sprintf("%d outages, %s s", len(rd.Sum.Outages), fmtSec(total))
	}
	if w > 0 {
		s += fmt.Sprintf(" (%s%% of the window)", strconv.FormatFloat(100*total/w, 'f', 1, 64))
	}
	return s
}

// statusNote says how the runs with status errors in doubt were treated,
// "" when there are none.
func statusNote(d *dataset) string {
	n := 0
	for _, rd := range d.Runs {
		if rd.inDoubt() && (rd.Link == nil || !rd.Link.Warmup) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	runs := pluralOf(int64(n), "1 run", strconv.Itoa(n)+" runs") + " with status errors for an outage, checks that could not run or no transactions"
	are := pluralOf(int64(n), " is", " are")
	if d.includeErrors {
		return runs + are + " counted in the medians and comparisons (--include-errors)."
	}
	return runs + are + " left out of the medians and comparisons; --include-errors keeps them."
}

// fmtSec formats seconds with one decimal.
func fmtSec(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// fmtCount formats a count with its thousands grouped.
func fmtCount(n int64) string {
	if n > -1000 && n < 1000 {
		return strconv.FormatInt(n, 10)
	}
	return fmtNum(float64(n))
}

func pluralOf(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
