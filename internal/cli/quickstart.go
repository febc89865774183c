package cli

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
)

func newQuickstartCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var dir, pgBin, runAs string
	var scale int
	var dur, warmup time.Duration
	var keep bool
	cmd := &cobra.Command{
		Use:   "quickstart",
		Short: "The main job: a managed PostgreSQL, TPC-B-like load, select-only and tpcb-like at 1, 2, 4 clients",
		Long: `Starts a managed PostgreSQL in a temporary directory, loads the TPC-B-like schema
at a small scale, runs select-only and tpcb-like at 1, 2 and 4 clients (short runs
with a warm-up), prints a summary table, stores every run in the results store,
stops the server and says where the results are. A few minutes on 2 cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			start := time.Now()
			storePath, err := rf.resolve(s.Getenv)
			if err != nil {
				return err
			}
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()

			if dir == "" {
				d, err := os.MkdirTemp("", "tunebench-quickstart-")
				if err != nil {
					return errs.Wrap(errs.KindEnvironment, err, "set TMPDIR to a writable directory or give --dir", "cannot make a temporary directory")
				}
				// The server runs as an unprivileged user when we are root: it must enter the directory.
				if err := os.Chmod(d, 0o755); err != nil {
					return err
				}
				dir = filepath.Join(d, "server")
				if !keep {
					defer os.RemoveAll(d)
				}
			}
			s.eprintf("== starting a managed PostgreSQL in %s\n", dir)
			srv, err := server.Start(ctx, server.Options{Dir: dir, PGBin: pgBin, RunAs: runAs, Log: s.Stderr,
				Settings: []server.Setting{{Name: "shared_buffers", Value: "512MB"}, {Name: "max_wal_size", Value: "4GB"}}})
			if err != nil {
				return err
			}
			s.Redactor.AddSecret(srv.Password())
			defer func() {
				if keep {
					s.eprintf("== server left running: tunebench server stop --dir %s\n", dir)
					return
				}
				sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := srv.Stop(sctx, "fast"); err != nil {
					s.eprintf("warning: stopping the server: %v\n", err)
				}
			}()
			t, err := pg.ParseTarget(srv.DSN(), "", s.Redactor)
			if err != nil {
				return err
			}

			s.eprintf("== loading tpcb at scale %d\n", scale)
			bar := newLoadBar(s)
			lst, err := tpcb.Load(ctx, t.Connect, tpcb.LoadOptions{Scale: scale, Workers: runtime.NumCPU()}, func(p tpcb.LoadProgress) {
				bar.update(p.Phase, p.Rows, p.TotalRows, p.Elapsed, p.Phase == "done")
			})
			if err != nil {
				return err
			}
			s.eprintf("loaded %d rows in %.1f s\n", lst.Rows, lst.Total.Seconds())

			var rows []summary
			var firstErr error
			for _, script := range []string{tpcb.ScriptSelectOnly, tpcb.ScriptTPCB} {
				for _, clients := range []int{1, 2, 4} {
					s.eprintf("== %s, %d clients, %s (+%s warm-up)\n", script, clients, dur, warmup)
					p := tpcbParams{Script: script, Clients: clients, Duration: dur, Warmup: warmup, MaxTries: 1,
						Distribution: "uniform", MaxErrorsPct: 1, Experiment: "quickstart"}
					sum, err := runTPCB(ctx, s, t, srv, st, p, false)
					if sum != nil {
						rows = append(rows, *sum)
						s.eprintf("   %.1f tps, p95 %.3f ms, errors %d (run %d)\n", sum.TPS, sum.LatencyMs.P95, sum.Errors, sum.RunID)
					}
					if err != nil {
						if errs.KindOf(err) == errs.KindInterrupted || ctx.Err() != nil {
							printSummaryTable(s, rows)
							return err
						}
						if firstErr == nil {
							firstErr = err
						}
					}
				}
			}
			s.printf("\nTPC-B-like on PostgreSQL %s (managed, scale %d), %s per run after %s warm-up:\n\n", srv.Binaries().Version, scale, dur, warmup)
			printSummaryTable(s, rows)
			s.printf("\nall runs are stored in %s\n", storePath)
			if len(rows) > 0 {
				s.printf("see one:      tunebench results show %d\n", rows[len(rows)-1].RunID)
			}
			s.printf("list them:    tunebench results list\n")
			s.printf("export one:   tunebench results export ID --format csv\n")
			s.printf("finished in %s\n", time.Since(start).Round(time.Second))
			return firstErr
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.StringVar(&dir, "dir", "", "server directory (default: a temporary one, removed at the end)")
	f.StringVar(&pgBin, "pg-bin", "", "directory with the PostgreSQL binaries")
	f.StringVar(&runAs, "run-as", "", "OS user for PostgreSQL when running as root (default: postgres)")
	f.IntVar(&scale, "scale", 10, "tpcb scale factor")
	f.DurationVar(&dur, "duration", 15*time.Second, "measured time per run")
	f.DurationVar(&warmup, "warmup", 3*time.Second, "warm-up per run")
	f.BoolVar(&keep, "keep", false, "leave the server running and its directory in place")
	return cmd
}
