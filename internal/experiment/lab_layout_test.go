package experiment

import (
	"strings"
	"testing"
)

// Layouts and envelopes in an experiment file: problems with their lines,
// and each (layout, envelope) pair its own server group.
func TestStorageAndEnvelopeDimensions(t *testing.T) {
	src := `name: lab
workload: {name: bench, options: {duration: 2s}}
layouts:
  e4: {loop: 256MiB, filesystem: ext4}
  x: {loop: 320MiB, filesystem: xfs}
envelopes:
  small: {memory: 256MiB}
  big: {memory: 2GiB, cpus: 2}
matrix:
  storage: [e4, x]
  envelope: [small, big]
`
	p := mustPlan(t, src, 1)
	groups := map[string]bool{}
	for _, c := range p.Configs {
		s, e, ok := ParseGroup(c.DataDir)
		if !ok || s != c.Storage || e != c.Envelope {
			t.Errorf("config %s: data dir %q", c.Label, c.DataDir)
		}
		groups[c.DataDir] = true
	}
	if len(groups) != 4 {
		t.Errorf("want a server group per (layout, envelope) pair, got %v", groups)
	}
	if d := p.DescribeStep(Step{Kind: StepOpen, DataDir: GroupKey("x", "big")}); d != "make storage layout x and start a managed server on it in envelope big" {
		t.Errorf("step: %q", d)
	}

	bad := []struct{ src, want string }{
		{strings.Replace(src, "storage: [e4, x]", "storage: [e4, zfs]", 1), `exp.yaml:10: storage layout "zfs" is not among the file's layouts: e4, x`},
		{strings.Replace(src, "envelope: [small, big]", "envelope: [tiny]", 1), `exp.yaml:11: envelope "tiny" is not among the file's envelopes`},
		{strings.Replace(src, "memory: 256MiB", "memory: lots", 1), `exp.yaml:7: envelope small: memory "lots"`},
		{strings.Replace(src, "filesystem: xfs", "filesystem: xfz", 1), `exp.yaml:5: layout x: unknown filesystem "xfz"`},
		{strings.Replace(src, "envelope: [small, big]", "data_dir: [/a, /b]", 1), `matrix.storage and matrix.data_dir both given`},
		{strings.Replace(src, "name: lab\n", "name: lab\ntarget: {dsn: 'host=127.0.0.1'}\n", 1), `matrix.storage needs a managed target`},
		{strings.Replace(src, "filesystem: ext4}", "filesystem: ext4, keep: true}", 1), `keeps its loop file, but without target.managed.dir`},
	}
	for _, b := range bad {
		_, err := Parse("exp.yaml", []byte(b.src), testCatalog(), pgSettings)
		if err == nil {
			var s *Spec
			if s, err = Parse("exp.yaml", []byte(b.src), testCatalog(), pgSettings); err == nil {
				_, err = NewPlan(s, 1)
			}
		}
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("want %q, got %v", b.want, err)
		}
	}

	// Without reuse each configuration gets a fresh filesystem; with
	// reuse: true the layout's configurations share one.
	for _, c := range []struct {
		reuse  string
		groups int
	}{{"", 4}, {", reuse: true", 2}} {
		src := "name: r\nworkload: {name: bench, options: {duration: 2s}}\nlayouts:\n  e4: {loop: 256MiB, filesystem: ext4" + c.reuse +
			"}\n  x: {loop: 320MiB, filesystem: xfs" + c.reuse + "}\nmatrix:\n  storage: [e4, x]\n  work_mem_dummy: [1]\n"
		src = strings.Replace(src, "  work_mem_dummy: [1]\n", "  settings: {work_mem: [4MB, 8MB]}\n", 1)
		p := mustPlan(t, src, 1)
		groups := map[string]bool{}
		for _, cf := range p.Configs {
			groups[cf.DataDir] = true
			if s, _, ok := ParseGroup(cf.DataDir); !ok || s != cf.Storage {
				t.Errorf("config %s: %q does not parse", cf.Label, cf.DataDir)
			}
		}
		if len(groups) != c.groups {
			t.Errorf("reuse %q: %d server groups, want %d: %v", c.reuse, len(groups), c.groups, groups)
		}
	}
}
