package dbgen

// entry is one value of a distribution and its weight.
type entry struct {
	value  string
	weight int32
}

// dist is a dists.dss distribution: values drawn with probability
// proportional to their weight by one uniform draw in [0, total weight).
type dist struct {
	values  []string
	weights []int32 // as published
	pick    []uint16
}

func newDist(entries []entry) *dist {
	d := &dist{values: make([]string, len(entries)), weights: make([]int32, len(entries))}
	valid := true
	for i, e := range entries {
		d.values[i], d.weights[i] = e.value, e.weight
		valid = valid && e.weight > 0
	}
	if valid {
		for i, e := range entries {
			for range e.weight {
				d.pick = append(d.pick, uint16(i))
			}
		}
	}
	return d
}

// draw picks a value by weight with one draw of s.
func (d *dist) draw(s *stream) string {
	return d.values[d.pick[s.intIn(0, int32(len(d.pick))-1)]]
}

// runningWeight is the sum of the weights of values 0..i: for nations, the
// region key.
func (d *dist) runningWeight(i int64) int64 {
	var sum int64
	for _, w := range d.weights[:i+1] {
		sum += int64(w)
	}
	return sum
}

// NationCount is the number of nations (dists.dss "nations").
const NationCount = 25
