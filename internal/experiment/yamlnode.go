package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/option"
)

// problem is one error in the file, at a line (0 = the file as a whole).
type problem struct {
	line int
	msg  string
}

// problems collects every error found in a file, so that one attempt shows
// them all.
type problems struct {
	file string
	list []problem
}

func (p *problems) add(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.list = append(p.list, problem{line: line, msg: fmt.Sprintf(format, args...)})
}

func (p *problems) addLine(line int, format string, args ...any) {
	p.list = append(p.list, problem{line: line, msg: fmt.Sprintf(format, args...)})
}

func (p *problems) empty() bool { return len(p.list) == 0 }

// SpecError is a file with one or more problems; each line of Error() is
// "file:line: message".
type SpecError struct {
	File  string
	Lines []int    // line of each problem (0 = the file as a whole)
	Msgs  []string // the problems, in line order
}

func (e *SpecError) Error() string {
	var b strings.Builder
	for i, m := range e.Msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.Lines[i] > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, e.Lines[i], m)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.File, m)
		}
	}
	return b.String()
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	sort.SliceStable(p.list, func(i, j int) bool { return p.list[i].line < p.list[j].line })
	e := &SpecError{File: p.file}
	seen := map[problem]bool{}
	for _, pr := range p.list {
		if seen[pr] {
			continue
		}
		seen[pr] = true
		e.Lines = append(e.Lines, pr.line)
		e.Msgs = append(e.Msgs, pr.msg)
	}
	return e
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML reads exactly one YAML document into a node tree. Syntax errors
// are reported with the file name and line.
func parseYAML(file string, src []byte, p *problems) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.addLine(0, "the file is empty; docs/experiments.md shows an example")
			return nil
		}
		addYAMLError(p, err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.addLine(extra.Line, "a second YAML document (---) in the file; an experiment file holds one")
	} else if !errors.Is(err, io.EOF) {
		addYAMLError(p, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.addLine(0, "the file is empty; docs/experiments.md shows an example")
		return nil
	}
	return doc.Content[0]
}

func addYAMLError(p *problems, err error) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, e := range te.Errors {
			addYAMLMessage(p, e)
		}
		return
	}
	addYAMLMessage(p, err.Error())
}

// parserProblems are the messages of the YAML library's parser (as opposed
// to its scanner). For them the library reports the line before the one
// where the enclosing construct (or the problem) starts, counting from 0;
// scanner errors come with the right line.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

func addYAMLMessage(p *problems, msg string) {
	line := 0
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if contains(parserProblems, msg) {
		line++
	}
	if strings.Contains(msg, "cannot start any token") || strings.Contains(msg, "tab character") {
		msg += " (a tab in the indentation? YAML indents with spaces)"
	}
	p.addLine(line, "YAML syntax: %s", msg)
}

// resolve follows aliases (*name) to the anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// describeNode names a node's kind for messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// field is one key of a mapping.
type field struct {
	key   string
	keyN  *yaml.Node
	value *yaml.Node
}

// mapping returns the fields of a mapping node in file order; it reports a
// node that is not a mapping and duplicate keys.
func mapping(n *yaml.Node, where string, p *problems) ([]field, bool) {
	n = resolve(n)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil, true // "key:" with nothing: an empty mapping
		}
		p.add(n, "%s must be a mapping (key: value lines), not %s", where, describeNode(n))
		return nil, false
	}
	var out []field
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.add(k, "a key in %s is not a plain name", where)
			continue
		}
		if k.Value == "<<" {
			p.add(k, "merge keys (<<) are not supported in %s; write the keys out", where)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.add(k, "key %q appears twice in %s (first on line %d)", k.Value, where, line)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, field{key: k.Value, keyN: k, value: resolve(v)})
	}
	return out, true
}

// unknownKey reports a key that is not one of known, with a suggestion.
func unknownKey(p *problems, f field, where string, known []string) {
	msg := fmt.Sprintf("unknown key %q in %s", f.key, where)
	if s := suggest(f.key, known); s != "" {
		msg += " (did you mean " + s + "?)"
	} else if len(known) > 0 && len(known) <= 16 {
		msg += "; the keys are " + strings.Join(known, ", ")
	}
	p.add(f.keyN, "%s", msg)
}

// scalar returns the text of a scalar node; it reports anything else.
func scalar(n *yaml.Node, where string, p *problems) (string, bool) {
	n = resolve(n)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.add(n, "%s must be a single value, not %s", where, describeNode(n))
		return "", false
	}
	if n.Tag == "!!null" {
		p.add(n, "%s has no value", where)
		return "", false
	}
	return n.Value, true
}

// list returns the items of a sequence; a single scalar counts as a list of one.
func list(n *yaml.Node, where string, p *problems) ([]*yaml.Node, bool) {
	n = resolve(n)
	if n == nil {
		return nil, false
	}
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			p.add(n, "%s is an empty list; give at least one value", where)
			return nil, false
		}
		out := make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			out[i] = resolve(c)
		}
		return out, true
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			p.add(n, "%s has no values", where)
			return nil, false
		}
		return []*yaml.Node{n}, true
	}
	p.add(n, "%s must be a list like [a, b], not %s", where, describeNode(n))
	return nil, false
}

// suggest returns the candidate closest to s when it is close enough to be
// a likely typo, else "".
func suggest(s string, candidates []string) string { return option.Suggest(s, candidates) }

func editDistance(a, b string) int { return option.EditDistance(a, b) }
