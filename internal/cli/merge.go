package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/merge"
	"github.com/tunebench/tunebench/internal/results"
)

// newResultsMergeCmd merges the shards of a split run into one run.
func newResultsMergeCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var key, jsonOut string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "merge SOURCE... [--key KEY]",
		Short: "Merge the shards of a split run (run --shard i/N) into one run",
		Long: `Makes one run of the shards of a run split over several drivers (run --shard
i/N): each SOURCE is a shard's results store (results.db), a rescue file, or a
directory holding them (each shard's directory of a Kubernetes volume). The
sources are only read.

The shards are grouped by their rendezvous key (--rendezvous); --key chooses
a group, else the newest is merged. The merged run is stored in --results:
transactions and tps summed, the latency histograms of every transaction type
merged (percentiles from the merged histogram, never averaged), the interval
series put on the window the shards shared (each shard's times moved to the
database server's clock by the offset it measured), the workload's
cross-check of the database made once on the merged figures (tpcc's NOPM,
tpcb's history growth). A missing or failed shard, or one whose window is
less than 99% covered by the common one, makes the merged run's status
errors, naming it. Merging the same shards again stores nothing new. With
--wait, the merge first waits for every shard's result to appear (the merge
Job of tunebench kube starts with the shards).

Exit codes: 4 when the merged run's status is errors, 5 when its cross-check
failed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			extras := s.Registry.Extras()
			var groups []*merge.Group
			var err error
			if wait > 0 {
				groups, err = merge.Await(ctx, args, key, wait, extras, func(msg string) { s.eprintf("%s\n", msg) })
			} else {
				groups, err = merge.Collect(ctx, args, extras)
			}
			if err != nil {
				return err
			}
			g, notes, err := merge.Pick(groups, key, args)
			if err != nil {
				return err
			}
			for _, n := range notes {
				s.eprintf("%s\n", n)
			}
			st, err := openStore(cmd, s, &rf)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Check(ctx); err != nil {
				return err
			}
			if id, err := merge.Existing(ctx, st, g, extras); err != nil {
				return err
			} else if id != 0 {
				s.printf("already merged: run %d in %s holds these shards (%s)\n", id, st.Path(), g.Label())
				return nil
			}
			w, _ := s.Registry.Get(g.Workload)
			s.eprintf("merging %s\n", g.Label())
			mg, err := merge.Merge(g, w)
			if err != nil {
				return err
			}
			sum := mg.Record.Summary
			id, err := results.Save(ctx, st, mg.Record)
			if err != nil {
				return err
			}
			if w != nil {
				s.printBlocks(showBlocks(w, sum, true))
			} else {
				s.printBlocks(results.MergeBlocks(sum))
				s.printBlocks(results.StatusLines(sum))
			}
			s.printf("stored as run %d in %s\n", id, st.Path())
			if jsonOut != "" {
				if err := writeJSONFile(jsonOut, sum); err != nil {
					return err
				}
			}
			if len(mg.Failures) > 0 {
				f := mg.Failures[0]
				return errs.New(errs.KindCheckFailed, f.Hint, "%s failed on the merged run %d: %s", f.What, id, f.Detail)
			}
			if sum.Status != "ok" {
				var why []string
				for _, r := range sum.StatusReasons {
					why = append(why, r.Detail)
				}
				return errs.New(errs.KindRunErrors, "see the shards named above; `tunebench results show "+fmt.Sprint(id)+"` shows the merged run",
					"merged run %d has status %s: %s", id, sum.Status, strings.Join(why, "; "))
			}
			return nil
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVar(&key, "key", "", "merge the shards that met under this rendezvous key (default: the newest sharded run in the sources)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for every shard's result to appear in the sources (a merge step started with the shards), then merge those there are")
	cmd.Flags().StringVar(&jsonOut, "json", "", "also write the merged run's summary as JSON to this file")
	return cmd
}
