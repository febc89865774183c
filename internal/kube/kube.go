// Package kube writes the Kubernetes manifests of a sharded run: a Job
// that loads the data once, and an Indexed Job whose pods are the shards
// (--shard N: each takes its index from JOB_COMPLETION_INDEX) meeting at
// the database (--rendezvous). The manifests are typed structures of our
// own, only the fields tunebench writes: k8s.io/api would make the binary
// several times larger (docs/scale-out.md) for what is only printing.
//
// They need Kubernetes 1.29 or later (Indexed Jobs with
// backoffLimitPerIndex, on by default from 1.29, GA in 1.33); the tests
// check them against the OpenAPI schemas of 1.29 to 1.37 offline.
package kube

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/errs"
)

// MinVersion is the oldest Kubernetes the manifests are for.
const MinVersion = "1.29"

// Plan is what the manifests run.
type Plan struct {
	Name      string // the Jobs' names: NAME-load and NAME
	Namespace string // "" for the current one
	Image     string
	Shards    int
	// RunArgs and LoadArgs are tunebench's arguments ("run tpcb -c 32
	// -T 10m"); the connection and the shard flags are added. No LoadArgs:
	// no load Job.
	RunArgs, LoadArgs []string
	DSN               string // without a password
	// Secret holds the password (key SecretKey): it reaches the pods as
	// PGPASSWORD, never inline.
	Secret, SecretKey string
	// Claim is the PersistentVolumeClaim the shards store their results on
	// (ReadWriteMany: one store a shard, shard-I/results.db); "" keeps them
	// in the pod (an emptyDir, gone with it: the run's output and --json
	// are in its log).
	Claim string
	// Spread asks the scheduler to put the shards on different nodes
	// (required pod anti-affinity: with fewer nodes than shards some stay
	// pending).
	Spread bool
	// Rendezvous is the key the shards meet under; unique per run.
	Rendezvous string
	// MergeWait is how long the merge Job (written with a Claim) waits
	// for every shard's result before it merges those there are.
	MergeWait string
}

// DefaultMergeWait is how long the merge Job waits for the shards by
// default: a long run's length, and its wait at the rendezvous.
const DefaultMergeWait = "6h"

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Check refuses what Kubernetes or the run would refuse later.
func (p *Plan) Check() error {
	switch {
	case !dnsLabel.MatchString(p.Name) || len(p.Name) > 52:
		return errs.Usage("give --name lower-case letters, digits and dashes, at most 52 (the Job's pods add their own suffix)", "bad --name %q", p.Name)
	case p.Shards < 1:
		return errs.Usage("give --shards 1 or more", "bad --shards %d", p.Shards)
	case p.Image == "":
		return errs.Usage("give --image (make image builds tunebench:VERSION; push it where the cluster pulls from)", "no image")
	case p.DSN == "":
		return errs.Usage("give --dsn, the database as the pods reach it (a Service name, say), without a password", "no --dsn")
	case strings.Contains(strings.ToLower(p.DSN), "password"):
		return errs.Usage("put the password in a Secret and give --password-secret", "refusing a password inside --dsn")
	case p.Secret == "":
		return errs.Usage("give --password-secret NAME (kubectl create secret generic NAME --from-literal=password=...)", "no --password-secret")
	case p.MergeWait != "" && !validWait(p.MergeWait):
		return errs.Usage("give --merge-wait a duration such as 90m or 6h", "bad --merge-wait %q", p.MergeWait)
	case len(p.RunArgs) < 2 || p.RunArgs[0] != "run":
		return errs.Usage("give the run after --: tunebench kube ... -- run tpcb -c 32 -T 10m", "no run arguments")
	}
	return nil
}

// Manifests are the YAML documents of the plan: the load Job (when there
// is a load) and the shards' Indexed Job.
func (p *Plan) Manifests() ([]byte, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var docs []any
	if len(p.LoadArgs) > 0 {
		docs = append(docs, p.loadJob())
	}
	docs = append(docs, p.shardJob())
	if p.Claim != "" {
		docs = append(docs, p.mergeJob())
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# tunebench kube: %d shards of `tunebench %s`, Kubernetes %s or later.\n", p.Shards, strings.Join(p.RunArgs, " "), MinVersion)
	if len(p.LoadArgs) > 0 {
		fmt.Fprintf(&b, "# Apply the load Job first and wait for it: kubectl wait --for=condition=complete job/%s-load\n", p.Name)
	}
	b.WriteString("# Then the shards; each stores its own part (docs/scale-out.md).\n")
	if p.Claim != "" {
		fmt.Fprintf(&b, "# %s-merge waits for every shard's result on the claim (at most %s), then merges them into\n# /results/merged/results.db: kubectl logs -f job/%s-merge\n", p.Name, p.mergeWait(), p.Name)
	} else {
		b.WriteString("# Without --claim the shards' results stay in their pods: no merge Job.\n")
	}
	for _, d := range docs {
		b.WriteString("---\n")
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

func (p *Plan) meta(name string) ObjectMeta {
	return ObjectMeta{Name: name, Namespace: p.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "tunebench", "app.kubernetes.io/instance": p.Name}}
}

// labels are a pod template's metadata: the labels alone (the Job names
// its pods).
func (p *Plan) labels() ObjectMeta {
	return ObjectMeta{Labels: p.meta("").Labels}
}

func (p *Plan) container(args []string, shard bool) Container {
	c := Container{
		Name: "tunebench", Image: p.Image, Args: args,
		Env:          []EnvVar{{Name: "PGPASSWORD", ValueFrom: &EnvVarSource{SecretKeyRef: &SecretKeySelector{Name: p.Secret, Key: p.SecretKey}}}},
		VolumeMounts: []VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		SecurityContext: &SecurityContext{AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true),
			Capabilities: &Capabilities{Drop: []string{"ALL"}}},
	}
	if shard {
		m := VolumeMount{Name: "results", MountPath: "/results"}
		if p.Claim != "" {
			m.SubPathExpr = "shard-$(JOB_COMPLETION_INDEX)"
		}
		c.VolumeMounts = append(c.VolumeMounts, m)
		// The Job controller sets it too; declared here, subPathExpr's
		// use of it does not depend on that.
		c.Env = append(c.Env, EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{
			FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
	}
	return c
}

func validWait(s string) bool {
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

func (p *Plan) mergeWait() string {
	if p.MergeWait == "" {
		return DefaultMergeWait
	}
	return p.MergeWait
}

// MergeArgs are the merge Job's tunebench arguments, its claim mounted
// on /results.
func (p *Plan) MergeArgs() []string {
	return []string{"results", "merge", "/results", "--key", p.Rendezvous, "--wait", p.mergeWait(),
		"--results", "/results/merged/results.db", "--json", "/results/merged/run.json"}
}

// mergeJob reads the whole claim (every shard's directory) and merges
// the shards once they have all stored their results, or when the wait
// is over (a shard that failed or never ran is then named missing).
func (p *Plan) mergeJob() Job {
	c := p.container(p.MergeArgs(), false)
	c.Env = nil // it reads files; no database
	c.VolumeMounts = append(c.VolumeMounts, VolumeMount{Name: "results", MountPath: "/results"})
	s := p.podSpec(c, false)
	s.Volumes = append(s.Volumes, Volume{Name: "results", PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: p.Claim}})
	return Job{APIVersion: "batch/v1", Kind: "Job", Metadata: p.meta(p.Name + "-merge"),
		Spec: JobSpec{BackoffLimit: new(int32(0)), Template: PodTemplateSpec{Metadata: p.labels(), Spec: s}}}
}

func (p *Plan) podSpec(c Container, shard bool) PodSpec {
	s := PodSpec{RestartPolicy: "Never", Containers: []Container{c},
		SecurityContext: &PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(65532)), RunAsGroup: new(int64(65532)), FSGroup: new(int64(65532))},
		Volumes:         []Volume{{Name: "tmp", EmptyDir: &EmptyDirVolumeSource{}}}}
	if shard {
		v := Volume{Name: "results", EmptyDir: &EmptyDirVolumeSource{}}
		if p.Claim != "" {
			v = Volume{Name: "results", PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: p.Claim}}
		}
		s.Volumes = append(s.Volumes, v)
		if p.Spread {
			s.Affinity = &Affinity{PodAntiAffinity: &PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []PodAffinityTerm{{
				LabelSelector: &LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/job-name": p.Name}},
				TopologyKey:   "kubernetes.io/hostname",
			}}}}
		}
	}
	return s
}

func (p *Plan) loadJob() Job {
	args := append(append([]string{}, p.LoadArgs...), "--dsn", p.DSN)
	return Job{APIVersion: "batch/v1", Kind: "Job", Metadata: p.meta(p.Name + "-load"),
		Spec: JobSpec{BackoffLimit: new(int32(0)), Template: PodTemplateSpec{Metadata: p.labels(), Spec: p.podSpec(p.container(args, false), false)}}}
}

// shardJob is the Indexed Job: one pod an index, none retried (a shard
// that failed would rejoin a rendezvous the others have left, and its
// measurement would not be the same run's: the merge names it missing).
func (p *Plan) shardJob() Job {
	args := append(append([]string{}, p.RunArgs...), "--dsn", p.DSN, "--shard", fmt.Sprint(p.Shards), "--rendezvous", p.Rendezvous,
		"--json", "/results/run.json")
	c := p.container(args, true)
	c.Env = append(c.Env, EnvVar{Name: "TUNEBENCH_RESULTS", Value: "/results/results.db"})
	n := int32(p.Shards)
	return Job{APIVersion: "batch/v1", Kind: "Job", Metadata: p.meta(p.Name),
		Spec: JobSpec{CompletionMode: "Indexed", Completions: &n, Parallelism: &n,
			BackoffLimitPerIndex: new(int32(0)), MaxFailedIndexes: new(int32(0)),
			Template: PodTemplateSpec{Metadata: p.labels(), Spec: p.podSpec(c, true)}}}
}
