// Package arch holds tests of the repository's structure: the import rules
// between packages (docs/architecture.md) and the rule that no workload
// name is switched on outside the workload's own package.
package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/workload/all"
)

const module = "github.com/tunebench/tunebench"

// pkg is one package of the module: its directory and the imports of its
// non-test files.
type pkg struct {
	dir     string // relative to the module root, e.g. internal/cli
	imports map[string]bool
	files   []*ast.File
	fset    *token.FileSet
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// packages parses every non-test Go file of the module.
func packages(t *testing.T) map[string]*pkg {
	t.Helper()
	r := root(t)
	out := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != r && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin" || n == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := out[rel]
		if p == nil {
			p = &pkg{dir: rel, imports: map[string]bool{}, fset: fset}
			out[rel] = p
		}
		p.files = append(p.files, f)
		for _, im := range f.Imports {
			v, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(v, module+"/") {
				p.imports[strings.TrimPrefix(v, module+"/")] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// workloadDirs are the packages of the registered workloads (what
// internal/workload/all imports).
func workloadDirs(t *testing.T, pkgs map[string]*pkg) map[string]bool {
	p := pkgs["internal/workload/all"]
	if p == nil {
		t.Fatal("no internal/workload/all")
	}
	out := map[string]bool{}
	for im := range p.imports {
		if strings.HasPrefix(im, "internal/workload/") {
			out[im] = true
		}
	}
	if len(out) < 4 {
		t.Fatalf("internal/workload/all imports %d workloads: %v", len(out), out)
	}
	return out
}

func sorted(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestImportRules(t *testing.T) {
	pkgs := packages(t)
	workloads := workloadDirs(t, pkgs)
	targets := map[string]bool{}
	for im := range pkgs["internal/target/all"].imports {
		if strings.HasPrefix(im, "internal/target/") {
			targets[im] = true
		}
	}
	if len(targets) == 0 {
		t.Fatal("internal/target/all imports no target")
	}
	// The layers that must not know a concrete workload or database.
	generic := []string{"internal/cli", "internal/report", "internal/lifecycle", "internal/results", "internal/experiment",
		"internal/store", "internal/run", "internal/metrics", "internal/target", "internal/workload", "internal/option", "internal/step", "internal/live",
		"internal/merge", "internal/kube"}
	for _, dir := range sorted(keys(pkgs)) {
		p := pkgs[dir]
		for _, im := range sorted(p.imports) {
			switch {
			case im == "internal/cli" && dir != "cmd/tunebench":
				t.Errorf("%s imports internal/cli: only cmd/tunebench may", dir)
			case im == "internal/workload/all" && dir != "cmd/tunebench":
				t.Errorf("%s imports internal/workload/all: only cmd/tunebench registers the workloads", dir)
			case im == "internal/target/all" && dir != "cmd/tunebench":
				t.Errorf("%s imports internal/target/all: only cmd/tunebench registers the targets", dir)
			case workloads[im] && dir != "internal/workload/all":
				t.Errorf("%s imports the workload %s: only internal/workload/all may", dir, im)
			}
			if targets[im] && dir != "internal/target/all" {
				for _, g := range generic {
					if dir == g {
						t.Errorf("%s imports the target %s: the generic layers see target.Target only", dir, im)
					}
				}
			}
		}
		if workloads[dir] {
			for _, im := range []string{"internal/cli", "internal/report", "internal/lifecycle", "internal/experiment"} {
				if p.imports[im] {
					t.Errorf("the workload %s imports %s", dir, im)
				}
			}
		}
	}
}

func keys(m map[string]*pkg) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestNoWorkloadNameSwitch: a registered workload's name is never a case
// of a switch or a key of a map literal outside the workload's own package:
// what differs between workloads is asked of the registry.
func TestNoWorkloadNameSwitch(t *testing.T) {
	pkgs := packages(t)
	workloads := workloadDirs(t, pkgs)
	names := map[string]bool{}
	for _, n := range all.Registry().Names() {
		names[n] = true
	}
	found := 0
	for _, dir := range sorted(keys(pkgs)) {
		if workloads[dir] {
			continue
		}
		p := pkgs[dir]
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				var lits []ast.Expr
				switch n := n.(type) {
				case *ast.CaseClause:
					lits = n.List
				case *ast.KeyValueExpr:
					lits = []ast.Expr{n.Key}
				case *ast.BinaryExpr:
					if n.Op == token.EQL || n.Op == token.NEQ {
						lits = []ast.Expr{n.X, n.Y}
					}
				}
				for _, e := range lits {
					bl, ok := e.(*ast.BasicLit)
					if !ok || bl.Kind != token.STRING {
						continue
					}
					if v, _ := strconv.Unquote(bl.Value); names[v] {
						found++
						t.Errorf("%s: the workload name %q is switched on outside its package; ask the registry instead", p.fset.Position(bl.Pos()), v)
					}
				}
				return true
			})
		}
	}
	_ = found
}

// TestMachineFactsInOneRoom: this machine's mount table, free space and
// processes' stat files are read by internal/machine only (issue 34: they
// were read by hand in seven places, one of which missed mounts under a
// path with a space), and pgpass files by jackc/pgpassfile.
func TestMachineFactsInOneRoom(t *testing.T) {
	for dir, p := range packages(t) {
		if dir == "internal/machine" {
			continue
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.BasicLit:
					if x.Kind != token.STRING {
						return true
					}
					s, _ := strconv.Unquote(x.Value)
					if strings.Contains(s, "mountinfo") && strings.HasPrefix(s, "/proc/") {
						t.Errorf("%s: %s reads the mount table: use internal/machine (Mounts, MountFor, IsMountPoint)", dir, p.fset.Position(x.Pos()))
					}
				case *ast.SelectorExpr:
					if x.Sel.Name == "Statfs" {
						t.Errorf("%s: %s calls Statfs: use machine.FreeBytes", dir, p.fset.Position(x.Pos()))
					}
				}
				return true
			})
		}
		for _, f := range p.files {
			for _, im := range f.Imports {
				if v, _ := strconv.Unquote(im.Path.Value); v == "github.com/moby/sys/mountinfo" {
					t.Errorf("%s imports moby/sys/mountinfo: internal/machine reads the mount table", dir)
				}
			}
		}
	}
}

// TestPostgresPackagesStayBehindTheTarget: the packages that know
// PostgreSQL (the managed server, its wire driver, its statistics
// samplers) are imported by target/pg and the workloads' PostgreSQL code,
// never by the generic layers (issue 39: the database seam); the `server`
// commands reach the managed servers through target.ServerManager.
func TestPostgresPackagesStayBehindTheTarget(t *testing.T) {
	pkgs := packages(t)
	postgres := []string{"internal/server", "internal/driver/pg", "internal/metrics/pgstat"}
	generic := []string{"internal/cli", "internal/report", "internal/lifecycle", "internal/results", "internal/experiment",
		"internal/store", "internal/run", "internal/metrics", "internal/metrics/sampler", "internal/target", "internal/workload",
		"internal/option", "internal/step", "internal/live", "internal/merge", "internal/kube", "internal/kernel", "internal/envinfo"}
	allowed := map[string]bool{}
	for _, g := range generic {
		p := pkgs[g]
		if p == nil {
			t.Errorf("no package %s", g)
			continue
		}
		for _, pg := range postgres {
			if p.imports[pg] && !allowed[g+" -> "+pg] {
				t.Errorf("%s imports %s: PostgreSQL's packages stay behind target.Target (put it in internal/target/pg)", g, pg)
			}
		}
	}
}
