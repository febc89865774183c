package cli

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/kube"
)

// newKubeCmd writes the Kubernetes manifests of a sharded run.
func newKubeCmd(s *State) *cobra.Command {
	p := &kube.Plan{SecretKey: "password"}
	var load, out string
	cmd := &cobra.Command{
		Use:   "kube --name NAME --shards N --dsn DSN --password-secret SECRET [--load 'load tpcb --scale 100'] -- run WORKLOAD [run flags]",
		Short: "Write the Kubernetes manifests of a run split over N shards (an Indexed Job; docs/scale-out.md)",
		Long: `Writes, as YAML, a Job that loads the data once (with --load) and an Indexed
Job of N pods, the shards of the run given after --: each runs
tunebench run ... --shard N (its index from JOB_COMPLETION_INDEX) --rendezvous KEY,
meets the others at the database and stores its part on the claim (one
directory a shard); with --claim, a third Job waits for the shards' results
and merges them (tunebench results merge) into /results/merged. The
password comes from a Secret as PGPASSWORD; no pod is retried. Kubernetes ` + kube.MinVersion + ` or later.`,
		Example: `  tunebench kube --name sweep1 --shards 4 --image registry.example.com/tunebench:v1 \
    --dsn "host=pg.bench.svc dbname=bench user=bench" --password-secret pg-bench \
    --claim bench-results --spread --load "load tpcb --scale 100" -- run tpcb -c 64 -T 10m > sweep1.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return errs.Usage("put the run after --: tunebench kube ... -- run tpcb -c 32 -T 10m", "unexpected arguments before --: %s", strings.Join(args, " "))
			}
			p.RunArgs, p.LoadArgs = args, strings.Fields(load)
			if p.Rendezvous == "" {
				p.Rendezvous = p.Name + "-" + time.Now().UTC().Format("20060102-150405")
			}
			b, err := p.Manifests()
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = s.Stdout.Write(b)
				return err
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return errs.Wrap(errs.KindEnvironment, err, "", "writing %s", out)
			}
			s.eprintf("manifests: %s (kubectl apply -f %s)\n", out, out)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&p.Name, "name", "", "the Jobs' name (NAME-load, NAME)")
	fs.IntVar(&p.Shards, "shards", 0, "how many shards (pods) run the run")
	fs.StringVar(&p.Image, "image", "tunebench:"+Version, "the image (make image builds it; push it where the cluster pulls from)")
	fs.StringVar(&p.Namespace, "namespace", "", "the namespace (default: kubectl's current one)")
	fs.StringVar(&p.DSN, "dsn", "", "the database as the pods reach it, without a password")
	fs.StringVar(&p.Secret, "password-secret", "", "the Secret holding the password")
	fs.StringVar(&p.SecretKey, "password-key", p.SecretKey, "its key in the Secret")
	fs.StringVar(&p.Claim, "claim", "", "a ReadWriteMany PersistentVolumeClaim for the shards' results (default: in the pods, gone with them)")
	fs.BoolVar(&p.Spread, "spread", false, "one shard a node (required pod anti-affinity)")
	fs.StringVar(&load, "load", "", "tunebench's load arguments for the load Job (e.g. 'load tpcb --scale 100'); none: no load Job")
	fs.StringVar(&p.Rendezvous, "rendezvous", "", "the key the shards meet under (default NAME-DATE-TIME: new for every run)")
	fs.StringVar(&p.MergeWait, "merge-wait", kube.DefaultMergeWait, "with --claim, how long the merge Job waits for every shard's result before it merges those there are")
	fs.StringVarP(&out, "output", "o", "", "write to this file (default: standard output)")
	return cmd
}
