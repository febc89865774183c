package cli

import (
	"context"

	"encoding/json"
	"fmt"
	"github.com/spf13/cobra"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
)

// applyRunSettings applies --set name=value settings for one run (validated,
// applied with a reload or restart as each needs, verified) and returns a
// restore function that puts them back whatever happens (a cancelled ctx
// does not stop the restore). With no settings it does nothing.
func applyRunSettings(ctx context.Context, s *State, t *pg.Target, srv *server.Server, kvs []string, verbose bool) ([]server.Applied, func(), error) {
	var settings []server.Setting
	for _, kv := range kvs {
		set, err := server.ParseSetting(kv)
		if err != nil {
			return nil, func() {}, err
		}
		settings = append(settings, set)
	}
	if len(settings) == 0 {
		return nil, func() {}, nil
	}
	var restarter server.Restarter
	if srv != nil {
		restarter = srv
	}
	applied, err := server.Apply(ctx, t.Connect, restarter, settings)
	if err != nil {
		return nil, func() {}, err
	}
	restore := func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if rerr := server.Restore(rctx, t.Connect, restarter, applied); rerr != nil {
			s.eprintf("warning: restoring settings failed: %v\n", rerr)
		} else if verbose {
			s.eprintf("settings restored\n")
		}
	}
	return applied, restore, nil
}

// saveRunLinked writes the run like saveRun, with an optional experiment
// plan link (saved in the same transaction) and the given series.
func saveRunLinked(ctx context.Context, st *store.Store, experiment, wl, variant, status string, params any, env *envinfo.Snapshot, sum *summary, check any, res *run.Result, link *store.PlanLink, series []store.Point) (int64, error) {
	pj, err := json.Marshal(params)
	if err != nil {
		return 0, err
	}
	ej, err := json.Marshal(env)
	if err != nil {
		return 0, err
	}
	r := &store.Run{Experiment: experiment, Workload: wl, Variant: variant, Status: status, StartedAt: res.StartedAt, EndedAt: res.EndedAt, Params: pj, Env: ej, Link: link}
	if check != nil {
		if r.Check, err = json.Marshal(check); err != nil {
			return 0, err
		}
	}
	r.Series = series
	if r.Histograms, err = encodeHists(res); err != nil {
		return 0, err
	}
	sumJSON := func(id int64) (json.RawMessage, error) {
		sum.RunID = id
		return json.Marshal(sum)
	}
	return st.SaveRunWithSummary(ctx, r, sumJSON)
}

// table prints right-aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(s *State) *table {
	return &table{tw: tabwriter.NewWriter(s.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")+"\t") }
func (t *table) flush()              { t.tw.Flush() }

// runMeasured is the common body of the run commands: resolve the target,
// open the store, optionally profile, run, and write the --json summary
// (also for an interrupted or failed run that produced one).
func runMeasured(cmd *cobra.Command, s *State, cf *connFlags, rf *resultsFlag, cpuProfile, jsonPath string,
	do func(ctx context.Context, t *pg.Target, srv *server.Server, st *store.Store) (*summary, error)) error {
	t, srv, err := cf.target(s)
	if err != nil {
		return err
	}
	st, err := openStore(cmd, s, rf)
	if err != nil {
		return err
	}
	defer st.Close()
	if cpuProfile != "" {
		stop, err := startCPUProfile(cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	sum, runErr := do(cmd.Context(), t, srv, st)
	if sum != nil && jsonPath != "" {
		if err := writeJSONFile(jsonPath, sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// runStored is the body of the commands that run without a database target
// (storage, fsblog): open the store, run, write the --json summary (also
// for an interrupted run that produced one). do returns a nil summary when
// it produced none.
func runStored(cmd *cobra.Command, s *State, rf *resultsFlag, jsonPath string, do func(ctx context.Context, st *store.Store) (any, error)) error {
	st, err := openStore(cmd, s, rf)
	if err != nil {
		return err
	}
	defer st.Close()
	sum, runErr := do(cmd.Context(), st)
	if sum != nil && jsonPath != "" {
		if err := writeJSONFile(jsonPath, sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}
