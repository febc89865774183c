package script

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

// drawScript draws from every random function and hash of pgbench's and
// stores the values with the client and the transaction's order.
const drawScript = `-- every random function, in one transaction per row
\set r random(1, 1000000)
\set e random_exponential(1, 1000, 2.5)
\set g random_gaussian(1, 1000, 3)
\set z random_zipfian(1, 1000, 1.5)
\set z2 random_zipfian(-50, 50, 3.7)
\set p permute(:r, 1000)
\set p2 permute(:r, 7, :r)
\set h hash(:r)
\set f hash_fnv1a(:r, :random_seed)
\set big random(-4611686018427387904, 4611686018427387902)
\if :r % 2 = 0
\set odd 0
\else
\set odd random(0, 1)
\endif
INSERT INTO draws(client, r, e, g, z, z2, p, p2, h, f, big, odd)
  VALUES (:client_id, :r, :e, :g, :z, :z2, :p, :p2, :h, :f, :big, :odd);
`

// TestDrawsMatchPgbench: for a seed, the values the script functions
// draw are pgbench's own. pgbench (this machine's) runs drawScript with
// --random-seed on 3 clients; the same script evaluated here, with the
// generators Seeds derives from the seed, must give every client the same
// sequence of values.
func TestDrawsMatchPgbench(t *testing.T) {
	srv := testutil.StartServer(t)
	pgbench := testutil.Pgbench(t, srv.Binaries())
	conn := testutil.Connect(t, srv)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TABLE draws (n bigserial, client int, r bigint, e bigint, g bigint, z bigint, z2 bigint,
		p bigint, p2 bigint, h bigint, f bigint, big bigint, odd bigint)`); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "draws.sql")
	if err := os.WriteFile(file, []byte(drawScript), 0o644); err != nil {
		t.Fatal(err)
	}
	const seed, clients, txs = 20261126, 3, 60
	cmd := exec.Command(pgbench, "-n", "-c", fmt.Sprint(clients), "-j", "1", "-t", fmt.Sprint(txs),
		"--random-seed", fmt.Sprint(seed), "-f", file)
	cmd.Env = append(os.Environ(), srv.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	rows, err := conn.Query(ctx, "SELECT client, r, e, g, z, z2, p, p2, h, f, big, odd FROM draws ORDER BY client, n")
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[int][][11]int64{}
	for rows.Next() {
		var c int
		var v [11]int64
		if err := rows.Scan(&c, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]); err != nil {
			t.Fatal(err)
		}
		theirs[c] = append(theirs[c], v)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}

	sc := NewScope()
	s, err := Parse("draws.sql", drawScript, sc, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gens, defSeed := gen.Seeds(seed, clients)
	names := []string{"r", "e", "g", "z", "z2", "p", "p2", "h", "f", "big", "odd"}
	for c := 0; c < clients; c++ {
		vs := NewVars(sc)
		vs.SetValue(sc.Slot("client_id"), Int(int64(c)))
		vs.SetValue(sc.Slot("random_seed"), Int(seed))
		vs.SetValue(sc.Slot("default_seed"), Int(defSeed))
		env := &Env{Vars: vs, Rand: gens[c]}
		if len(theirs[c]) != txs {
			t.Fatalf("client %d: pgbench stored %d rows, want %d", c, len(theirs[c]), txs)
		}
		for tx := 0; tx < txs; tx++ {
			runSets(t, s, env)
			for k, name := range names {
				v, err := vs.Value(sc.Slot(name))
				if err != nil {
					t.Fatal(err)
				}
				if want := theirs[c][tx][k]; v.I != want {
					t.Fatalf("client %d transaction %d: %s = %d here, %d in pgbench", c, tx, name, v.I, want)
				}
			}
		}
	}
}

// runSets runs the meta-commands of one pass through s (\set and the
// branches), as a client would, skipping the SQL.
func runSets(t *testing.T, s *Script, env *Env) {
	t.Helper()
	for i := 0; i < len(s.Commands); {
		c := &s.Commands[i]
		switch c.Kind {
		case CmdSet:
			v, err := c.Expr.Eval(env)
			if err != nil {
				t.Fatalf("line %d: %v", c.Line, err)
			}
			env.Vars.SetValue(c.Var, v)
		case CmdIf, CmdElif:
			v, err := c.Expr.Eval(env)
			if err != nil {
				t.Fatalf("line %d: %v", c.Line, err)
			}
			if !v.truth() {
				i = c.Next
				if s.Commands[i].Kind == CmdElse {
					i++
				}
				continue
			}
		case CmdElse:
			i = c.End
			continue
		}
		i++
	}
}

// TestPermuteIsABijection: for sizes around powers of two, every seed
// gives a permutation of [0, size).
func TestPermuteIsABijection(t *testing.T) {
	for _, size := range []int64{1, 2, 3, 4, 5, 7, 8, 9, 100, 127, 128, 129, 1000} {
		for seed := int64(-3); seed < 4; seed++ {
			seen := make([]bool, size)
			for v := int64(0); v < size; v++ {
				x := Permute(v, size, seed)
				if x < 0 || x >= size || seen[x] {
					t.Fatalf("permute(%d, %d, %d) = %d: not a bijection of [0, %d)", v, size, seed, x, size)
				}
				seen[x] = true
			}
		}
	}
	// Values beyond the size are taken modulo it.
	if Permute(1003, 1000, 5) != Permute(3, 1000, 5) {
		t.Error("permute(v) differs from permute(v mod size)")
	}
}
