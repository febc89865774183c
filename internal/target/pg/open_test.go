package pg

import (
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/target"
)

// TestCheckRestartTimeout: --restart-timeout is positive and goes with
// --restart-command; the restore of the settings waits what the restart
// may take, at least 2 minutes.
func TestCheckRestartTimeout(t *testing.T) {
	for _, c := range []struct {
		spec target.Spec
		want string
	}{
		{target.Spec{DSN: "host=db1", RestartCommand: "ssh db1 restart", RestartTimeout: 10 * time.Minute}, ""},
		{target.Spec{DSN: "host=db1", RestartCommand: "ssh db1 restart"}, ""},
		{target.Spec{DSN: "host=db1", RestartTimeout: time.Minute}, "--restart-timeout bounds --restart-command, and there is none"},
		{target.Spec{DSN: "host=db1", RestartCommand: "ssh db1 restart", RestartTimeout: -time.Minute}, "is negative"},
	} {
		err := (Driver{}).Check(c.spec)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || errs.KindOf(err) != errs.KindUsage) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	for _, c := range []struct {
		r    server.Restarter
		want time.Duration
	}{
		{nil, 2 * time.Minute},
		{&server.CommandRestarter{}, 6 * time.Minute},
		{&server.CommandRestarter{Timeout: 30 * time.Second}, 2 * time.Minute},
		{&server.CommandRestarter{Timeout: 10 * time.Minute}, 11 * time.Minute},
	} {
		if got := server.RestoreBudget(c.r); got != c.want {
			t.Errorf("RestoreBudget(%+v) = %s, want %s", c.r, got, c.want)
		}
	}
}
