package dbgen

import "sync"

// The comments of every table are slices of one pool of generated English:
// 300 MiB of sentences built from the grammar of dists.dss by one stream
// seeded 933588178, as dbgen builds its text pool (text.c). A comment is a
// random offset and length into the pool, so the pool must be whole before
// the first comment.
const (
	poolSize    = 300 << 20
	poolSeed    = 933588178
	maxSentence = 256
)

var (
	poolOnce sync.Once
	poolText []byte
)

// textPool returns the pool, built once per process (about a second and
// 300 MiB).
func textPool() []byte {
	poolOnce.Do(func() { poolText = buildPool(poolSize) })
	return poolText
}

func buildPool(size int) []byte {
	s := newStream(poolSeed, 1<<31-1)
	out := make([]byte, 0, size+maxSentence)
	for len(out) < size {
		out = sentence(out, &s)
	}
	return out[:size]
}

// sentence appends one sentence: a grammar pattern of phrase letters (every
// other character; the rest are spaces), each phrase followed by a space,
// the terminator replacing the space before it.
func sentence(out []byte, s *stream) []byte {
	pattern := grammar.draw(s)
	for i := 0; i < len(pattern); i += 2 {
		switch pattern[i] {
		case 'V':
			out = verbPhrase(out, s)
		case 'N':
			out = nounPhrase(out, s)
		case 'P':
			out = append(out, prepositions.draw(s)...)
			out = append(out, " the "...)
			out = nounPhrase(out, s)
		case 'T':
			out = out[:len(out)-1]
			out = append(out, terminators.draw(s)...)
		default:
			panic("dbgen: grammar letter " + string(pattern[i]))
		}
		if out[len(out)-1] != ' ' {
			out = append(out, ' ')
		}
	}
	return out
}

func verbPhrase(out []byte, s *stream) []byte {
	pattern := verbPhrases.draw(s)
	for i := 0; i < len(pattern); i += 2 {
		var words *dist
		switch pattern[i] {
		case 'D':
			words = adverbs
		case 'V':
			words = verbs
		case 'X':
			words = auxiliaries
		default:
			panic("dbgen: verb phrase letter " + string(pattern[i]))
		}
		out = append(out, words.draw(s)...)
		out = append(out, ' ')
	}
	return out
}

// nounPhrase reads every character of its pattern: letters are words,
// spaces are skipped, and a comma is attached to the word before it.
func nounPhrase(out []byte, s *stream) []byte {
	pattern := nounPhrases.draw(s)
	for i := 0; i < len(pattern); i++ {
		var words *dist
		switch pattern[i] {
		case 'A':
			words = articles
		case 'J':
			words = adjectives
		case 'D':
			words = adverbs
		case 'N':
			words = nouns
		case ',':
			out = append(out[:len(out)-1], ", "...)
			continue
		case ' ':
			continue
		default:
			panic("dbgen: noun phrase letter " + string(pattern[i]))
		}
		out = append(out, words.draw(s)...)
		out = append(out, ' ')
	}
	return out
}

// text is a comment column: an offset into the pool and a length between
// 0.4 and 1.6 times the column's average, two draws per value.
type text struct {
	s        stream
	min, max int32
}

func newText(seed int64, average float64, perRow int64) text {
	return text{
		s:   newStream(seed, 2*perRow),
		min: int32(average * 0.4),
		max: int32(average * 1.6),
	}
}

func (t *text) next(pool []byte) []byte {
	off := t.s.intIn(0, int32(len(pool))-t.max)
	n := t.s.intIn(t.min, t.max)
	return pool[off : off+n]
}
