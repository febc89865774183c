package lifecycle

import (
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/run"
)

// TestThreadsNote: a run whose workers were to share fewer threads, and
// got one each, says so; one that was multiplexed, or asked for a thread
// per client, says nothing.
func TestThreadsNote(t *testing.T) {
	for _, c := range []struct {
		threads, workers, got int
		want                  bool
	}{
		{2, 4, 4, true}, {2, 4, 2, false}, {4, 4, 4, false}, {0, 4, 4, false}, {1, 1, 1, false},
	} {
		note := threadsNote(c.threads, &run.Result{Workers: c.workers, Threads: c.got})
		if (note != "") != c.want || c.want && !strings.Contains(note, "cannot be multiplexed") {
			t.Errorf("threads %d, workers %d, ran on %d: note %q", c.threads, c.workers, c.got, note)
		}
	}
}
