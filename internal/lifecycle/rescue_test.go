package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// A rescued run keeps its own exit code and status; the message says it
// was not stored and where it is, and the fix is the import command.
func TestRescuedExit(t *testing.T) {
	saveErr := errs.Wrap(errs.KindInternal, &store.RescueError{Path: "/w/r.json", Store: "/s/results.db",
		Err: errors.New("save run in /s/results.db: database or disk is full (13)")}, "tunebench results import /w/r.json", "")
	cases := []struct {
		name   string
		status string
		own    error
		kind   errs.Kind
		msg    string
	}{
		{"ok", store.StatusOK, nil, errs.KindInternal, "the run (status ok) was not stored: save run in /s/results.db: database or disk is full (13); the complete result was written to /w/r.json"},
		{"interrupted", store.StatusInterrupted, errs.New(errs.KindInterrupted, "", "run interrupted; partial result saved as run 0"), errs.KindInterrupted, "the run (status interrupted) was not stored: "},
		{"check", store.StatusFailed, errs.New(errs.KindCheckFailed, "h", "balances failed after run 0"), errs.KindCheckFailed, "the run (status failed) was not stored: "},
		{"errors", store.StatusErrors, errs.New(errs.KindRunErrors, "h", "run 0 finished with 9%% errors"), errs.KindRunErrors, "the run (status errors) was not stored: "},
		{"executor", store.StatusErrors, errs.New(errs.KindConnect, "", "client 1: connection lost"), errs.KindConnect, "client 1: connection lost; the run (status errors) was not stored: "},
	}
	for _, c := range cases {
		req := &Request{rescued: saveErr}
		sum, err := req.finish(&results.Summary{Status: c.status}, c.own)
		if sum == nil || errs.KindOf(err) != c.kind || !strings.HasPrefix(err.Error(), c.msg) ||
			strings.Contains(err.Error(), "run 0") || errs.HintOf(err) != "tunebench results import /w/r.json" {
			t.Errorf("%s: %v (kind %v, hint %q)", c.name, err, errs.KindOf(err), errs.HintOf(err))
		}
		if p, ok := store.RescuedTo(err); !ok || p != "/w/r.json" {
			t.Errorf("%s: the rescue file is lost from the error: %q", c.name, p)
		}
	}
	// Without a rescue, the run's error is returned as it is.
	own := errors.New("x")
	if _, err := (&Request{}).finish(nil, own); err != own {
		t.Errorf("finish without a rescue: %v", err)
	}
}
