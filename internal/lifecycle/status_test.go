package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// The status says why it is not ok: an outage over max_outage_pct or a
// check that could not run makes a run with few errors end with status
// errors and exit 4; an outage under the threshold and errors within
// max_errors_pct give status errors and exit 0.
func TestDecideStatus(t *testing.T) {
	x := workload.Exec{Exec: option.Exec{MaxErrorsPct: 1, MaxOutagePct: 5}}
	type want struct {
		status string
		codes  string
		exit4  bool
	}
	for _, c := range []struct {
		name     string
		outages  []results.Outage
		errors   int64
		v        workload.Verdict
		afterErr error
		execErr  error
		want     want
		// unfinished: transactions cancelled after the wait, and none
		// ended (else 1,000 did).
		unfinished int64
	}{
		{"ok", nil, 0, workload.Verdict{}, nil, nil, want{"ok", "", false}, 0},
		{"short outage", []results.Outage{{StartS: 3, EndS: 3.5}}, 5, workload.Verdict{}, nil, nil, want{"errors", "errors", false}, 0},
		{"long outage", []results.Outage{{StartS: 6, EndS: 19.8}}, 59, workload.Verdict{}, nil, nil, want{"errors", "outage,errors", true}, 0},
		{"cross-check not run", nil, 0, workload.Verdict{NotRun: []string{"the NOPM cross-check could not run"}}, nil, nil, want{"errors", "not_checked", true}, 0},
		{"after failed", nil, 0, workload.Verdict{}, errors.New("no connection"), nil, want{"errors", "not_checked", true}, 0},
		{"errors over", nil, 200, workload.Verdict{}, nil, nil, want{"errors", "errors_over_threshold", true}, 0},
		{"failed beats outage", []results.Outage{{StartS: 0, EndS: 20}}, 0, workload.Verdict{Failures: []workload.Failure{{What: "consistency check"}}}, nil, nil,
			want{"failed", "check_failed,outage", false}, 0},
		// A worker that stopped the run (a script error) leaves a failed
		// run, with the error as its reason, not an ok one.
		{"aborted", nil, 0, workload.Verdict{}, nil, errors.New("script s.sql: the script ended inside a transaction block"), want{"failed", "aborted", false}, 0},
		// The measured window passed and no transaction ended: never ok.
		{"no transactions", nil, 0, workload.Verdict{}, nil, nil, want{"errors", "no_transactions", true}, 1},
	} {
		sum := &results.Summary{Measured: &results.Measured{DurationS: 20, Outages: c.outages, Errors: c.errors, ErrorsPct: float64(c.errors) / 100, Transactions: 1000}}
		if c.unfinished > 0 {
			sum.Transactions, sum.Unfinished = 0, c.unfinished
		}
		res := &run.Result{Errors: c.errors}
		decideStatus(sum, res, &c.v, c.afterErr, c.execErr, x)
		var codes []string
		for _, r := range sum.StatusReasons {
			codes = append(codes, r.Code)
			if r.Detail == "" {
				t.Errorf("%s: reason %s without a detail", c.name, r.Code)
			}
		}
		if sum.Status != c.want.status || strings.Join(codes, ",") != c.want.codes {
			t.Errorf("%s: status %s %v, want %s %s", c.name, sum.Status, codes, c.want.status, c.want.codes)
		}
		if c.want.status == "failed" {
			continue
		}
		err := errorsExit(sum, 7, nil, nil, nil)
		var e *errs.Error
		if got := errors.As(err, &e) && e.Kind == errs.KindRunErrors; got != c.want.exit4 {
			t.Errorf("%s: exit error %v, want exit 4: %v", c.name, err, c.want.exit4)
		}
	}
	sum := &results.Summary{Measured: &results.Measured{DurationS: 20, Outages: []results.Outage{{StartS: 6, EndS: 20}}}}
	decideStatus(sum, &run.Result{}, &workload.Verdict{}, nil, nil, x)
	err := errorsExit(sum, 7, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "unreachable for 14.0 s of the 20.0 s measured") || !strings.Contains(errs.HintOf(err), "--max-outage-pct") {
		t.Errorf("exit error %v (hint %q): want the outage and the option", err, errs.HintOf(err))
	}
	// Down until the end: the server comes first in the fix, the
	// threshold after; an outage in the middle: why it went away.
	if h := errs.HintOf(err); !strings.HasPrefix(h, "check the server first: it was still unreachable when the run ended") {
		t.Errorf("fix for a server down at the end: %q", h)
	}
	sum = &results.Summary{Measured: &results.Measured{DurationS: 20, Transactions: 100, Outages: []results.Outage{{StartS: 6, EndS: 12}}}}
	decideStatus(sum, &run.Result{}, &workload.Verdict{}, nil, nil, x)
	if h := errs.HintOf(errorsExit(sum, 7, nil, nil, nil)); !strings.HasPrefix(h, "check the server's log for why it was unreachable; raise --max-outage-pct only") {
		t.Errorf("fix for an outage in the middle: %q", h)
	}
}

// A run whose errors are mostly disk full names the filesystem and its free
// space in its fix line, not "raise --max-errors-pct" (issue 16, item 7).
func TestErrorsExitDiskFullNamesTheFilesystem(t *testing.T) {
	sum := &results.Summary{Status: "errors", Measured: &results.Measured{BySQLState: map[string]int64{"53100": 40, "40001": 2}},
		StatusReasons: []results.Reason{{Code: results.ReasonErrorsOver, Detail: "42 transactions ended in errors"}}}
	space := func() driver.Space {
		return driver.Space{Dir: "/srv/pg/data", Mount: "/srv", Free: 7 << 10, Known: true}
	}
	err := errorsExit(sum, 3, nil, nil, space)
	hint := errs.HintOf(err)
	if !strings.Contains(hint, "disk full") || !strings.Contains(hint, "/srv") || !strings.Contains(hint, "7.0 KiB free") || strings.Contains(hint, "--max-errors-pct") {
		t.Errorf("fix line %q: want the filesystem, its free space, no --max-errors-pct", hint)
	}
}

// hinter is a target that names the fix of its own error codes.
type hinter struct{ target.Target }

func (hinter) ErrorsHint(byCode map[string]int64) string {
	if byCode["1205"] > 0 {
		return "raise innodb_lock_wait_timeout"
	}
	return ""
}

// A target's own error codes get its fix line (target.ErrorsHinter); the
// SQLSTATE rules stand when it has none.
func TestErrorsExitTargetHint(t *testing.T) {
	sum := &results.Summary{Status: "errors", Measured: &results.Measured{BySQLState: map[string]int64{"1205": 40}},
		StatusReasons: []results.Reason{{Code: results.ReasonErrorsOver, Detail: "40 transactions ended in errors"}}}
	if hint := errs.HintOf(errorsExit(sum, 3, nil, hinter{}, nil)); hint != "raise innodb_lock_wait_timeout" {
		t.Errorf("fix line %q", hint)
	}
	sum.Measured.BySQLState = map[string]int64{"53300": 40}
	if hint := errs.HintOf(errorsExit(sum, 3, nil, hinter{}, nil)); !strings.Contains(hint, "max_connections") {
		t.Errorf("fix line %q: want the SQLSTATE rule", hint)
	}
}

// TestNoTransactions: a run without transactions says why, as far as it
// knows, and a fix that fits.
func TestNoTransactions(t *testing.T) {
	for _, c := range []struct {
		m            results.Measured
		detail, hint string
	}{
		{results.Measured{DurationS: 3, Unfinished: 2}, "no transaction ended in the 3.0 s measured: 2 were still running and were cancelled after the wait of 10s", "(--duration)"},
		{results.Measured{DurationS: 3, OpenLoop: &results.OpenLoop{TargetTPS: 5, Skipped: 14}}, "all 14 starts were skipped, later than --latency-limit", "raise --latency-limit"},
		{results.Measured{DurationS: 3, OpenLoop: &results.OpenLoop{TargetTPS: 0.05}}, "the schedule of 0.05 tps drew no start in it", "raise --rate or --duration"},
		{results.Measured{DurationS: 3}, "no transaction ended in the 3.0 s measured", "the server (its log)"},
	} {
		if d, h := noTransactions(&c.m), noTransactionsHint(&c.m); !strings.Contains(d, c.detail) || !strings.Contains(h, c.hint) {
			t.Errorf("%+v: %q / %q, want %q / %q", c.m, d, h, c.detail, c.hint)
		}
	}
}
