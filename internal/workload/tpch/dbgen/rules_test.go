package dbgen

import (
	"bytes"
	"strings"
	"testing"
)

// Clause 4.2.3: every part has 4 distinct suppliers, and a lineitem's
// supplier is one of its part's.
func TestPartSuppliers(t *testing.T) {
	for _, suppliers := range []int64{100, 10_000} {
		for part := int64(1); part <= 20*suppliers; part += 97 { // parts are 20 per supplier
			seen := map[int64]bool{}
			for i := range int64(4) {
				s := PartSupplier(part, i, suppliers)
				if s < 1 || s > suppliers {
					t.Fatalf("part %d supplier %d: key %d out of 1..%d", part, i, s, suppliers)
				}
				seen[s] = true
			}
			if len(seen) != 4 {
				t.Fatalf("part %d has %d distinct suppliers at %d suppliers, want 4", part, len(seen), suppliers)
			}
		}
	}
	g := New(0.01, COPY)
	ps, _ := g.Append(nil, PartSupp, 0, Units(PartSupp, 0.01))
	pairs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(ps)), "\n") {
		f := strings.SplitN(line, "|", 3)
		pairs[f[0]+"|"+f[1]] = true
	}
	li, _ := g.Append(nil, Lineitem, 0, 500)
	for _, line := range strings.Split(strings.TrimSpace(string(li)), "\n") {
		f := strings.SplitN(line, "|", 4)
		if !pairs[f[1]+"|"+f[2]] {
			t.Fatalf("lineitem %q: (part, supplier) is not in partsupp", line)
		}
	}
}

// The dates run from 1992-01-01 over 2,557 days; CURRENTDATE is
// 1995-06-17, the last day "in the past".
func TestDates(t *testing.T) {
	if got := string(dateText[0][:]); got != "1992-01-01" {
		t.Errorf("day 0 = %s", got)
	}
	if got := string(dateText[dateRange-1][:]); got != "1998-12-31" {
		t.Errorf("last day = %s", got)
	}
	if got := string(dateText[currentDate][:]); got != "1995-06-17" || !inPast(currentDate) || inPast(currentDate+1) {
		t.Errorf("CURRENTDATE = %s (in past %v, next day in past %v)", got, inPast(currentDate), inPast(currentDate+1))
	}
	// The last order date leaves room for the last ship and receipt dates.
	if orderDateMax+121+30 >= dateRange {
		t.Errorf("order dates up to day %d overflow the range", orderDateMax)
	}
}

// The text pool is the grammar's sentences: words from the lists,
// separated by single spaces, each sentence ended by a terminator.
func TestTextPoolGrammar(t *testing.T) {
	s := newStream(poolSeed, 1<<31-1)
	var text []byte
	for range 200 {
		text = sentence(text, &s)
	}
	words := map[string]bool{}
	for _, d := range []*dist{nouns, verbs, adverbs, articles, prepositions, auxiliaries, adjectives} {
		for _, w := range d.values {
			for _, f := range strings.Fields(w) { // "pinto beans"
				words[f] = true
			}
		}
	}
	if bytes.Contains(text, []byte("  ")) {
		t.Fatal("two spaces in a row")
	}
	ends := 0
	for _, tok := range strings.Fields(string(text)) {
		w := strings.TrimRight(tok, ".,;:?!-")
		if w != tok && strings.ContainsAny(tok[len(w):], ".;:?!-") {
			ends++
		}
		if !words[w] && w != "the" {
			t.Fatalf("%q is not a word of the lists", tok)
		}
	}
	if ends < 200 {
		t.Errorf("%d sentence ends in 200 sentences", ends)
	}
	// The pool is the first 300 MiB of those sentences.
	if !bytes.HasPrefix(textPool(), text[:4096]) {
		t.Error("the pool does not start with the grammar's first sentences")
	}
}
