package option

import "strings"

// Suggest returns the candidate closest to s when it is close enough to be
// a likely typo (a few edits, or a distinctive prefix), else "".
func Suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := EditDistance(ls, strings.ToLower(c))
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(s) <= 4 {
		limit = 1
	}
	if len(s) >= 12 {
		limit = 3
	}
	if best != "" && bestD <= limit {
		return best
	}
	// A distinctive prefix or containment also counts (max_wal -> max_wal_size).
	if len(ls) >= 4 {
		var hits []string
		for _, c := range candidates {
			lc := strings.ToLower(c)
			if strings.HasPrefix(lc, ls) || strings.HasPrefix(ls, lc) {
				hits = append(hits, c)
			}
		}
		if len(hits) == 1 {
			return hits[0]
		}
	}
	return ""
}

// EditDistance is the optimal string alignment distance (Levenshtein with
// adjacent transpositions).
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
