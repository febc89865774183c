package store

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A reader opening a store while another process creates it sees no
// schema (not a store yet) or the whole of it, never a store half made:
// a merge waiting for a shard's store read one at schema 2 and failed on
// a column of schema 3.
func TestReaderNeverSeesHalfMadeStore(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		path := filepath.Join(t.TempDir(), "results.db")
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				r, err := OpenReadOnly(ctx, path)
				if err != nil {
					continue // not there yet, or no schema yet
				}
				if r.version != len(migrations()) {
					t.Errorf("round %d: a reader saw schema %d of %d", i, r.version, len(migrations()))
				} else if _, err := r.ListRuns(ctx, ListFilter{}); err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("round %d: listing a store being made: %v", i, err)
				}
				r.Close()
				time.Sleep(100 * time.Microsecond)
			}
		}()
		w, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		close(done)
		wg.Wait()
		w.Close()
	}
}
