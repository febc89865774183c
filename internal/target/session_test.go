package target

import (
	"context"
	"runtime"
	"testing"

	"github.com/tunebench/tunebench/internal/step"
)

type plainSessions struct{}

func (plainSessions) NewSession(context.Context, *SessionSpec) (Session, error) { return nil, nil }
func (plainSessions) NewThread() step.Thread                                    { return nil }

type threaderSessions struct {
	plainSessions
	n int
}

func (s threaderSessions) DriverThreads(int) int { return s.n }

// TestDriverThreads: --threads given wins; otherwise the target's choice
// or one per core, never more than one per client.
func TestDriverThreads(t *testing.T) {
	cpus := runtime.NumCPU()
	for _, c := range []struct {
		name       string
		ss         Sessions
		n, clients int
		want       int
	}{
		{"given", plainSessions{}, 3, 64, 3},
		{"given above clients", plainSessions{}, 8, 2, 8},
		{"one per core", plainSessions{}, 0, 1000, cpus},
		{"one per client", plainSessions{}, 0, 1, 1},
		{"no clients yet", plainSessions{}, 0, 0, 1},
		{"target's", threaderSessions{n: 1}, 0, 1000, 1},
		{"target's, per client", threaderSessions{n: 5}, 0, 2, 2},
		{"target's none", threaderSessions{n: 0}, 0, 1000, cpus},
		{"given over target's", threaderSessions{n: 1}, 4, 16, 4},
	} {
		if got := DriverThreads(c.ss, c.n, c.clients); got != c.want {
			t.Errorf("%s: DriverThreads(%d, %d) = %d, want %d", c.name, c.n, c.clients, got, c.want)
		}
	}
}
