package script

import (
	"fmt"
	"strconv"
	"strings"
)

// The SQL commands of a script (parse.go reads the script and its
// meta-commands): the text up to the semicolon that ends a command, its
// quotes, dollar quotes and comments, and its :variables.

// sql reads one SQL command: up to an unquoted semicolon (not \;), a
// meta-command on the same line (\gset, \aset; another ends the command
// too, as in pgbench), or the end of the text.
func (p *scriptParser) sql() error {
	startLine := p.line
	var b strings.Builder
	var params []int
	slots := map[int]int{} // variable slot -> parameter number
	// Each use of a variable: where its placeholder is in b, its slot
	// and name (a compound command's text is cut there).
	type use struct {
		at, end, slot int
		name          string
	}
	var uses []use
	var splits []int // where each \; ends in b
	s := p.src
	i := p.pos
	compound := false
	flush := func(cmdEnd int) {
		text := strings.TrimSpace(s[p.pos:cmdEnd])
		c := Command{Kind: CmdSQL, Line: startLine, Text: text,
			SQL: strings.TrimSpace(b.String()), Params: params, Var: -1, SleepVar: -1, Compound: compound, Uses: len(uses)}
		if compound {
			all, from := b.String(), 0
			for _, u := range uses {
				c.Pieces = append(c.Pieces, all[from:u.at])
				c.VarSlots = append(c.VarSlots, u.slot)
				c.VarNames = append(c.VarNames, u.name)
				from = u.end
			}
			c.Pieces = append(c.Pieces, all[from:])
			c.Pieces[0] = strings.TrimLeft(c.Pieces[0], " \t\r\n\f\v")
			last := len(c.Pieces) - 1
			c.Pieces[last] = strings.TrimRight(c.Pieces[last], " \t\r\n\f\v")
			from = 0
			for _, at := range append(splits, len(all)) {
				c.Statements = append(c.Statements, strings.TrimSpace(all[from:at]))
				from = at
			}
		}
		p.s.Commands = append(p.s.Commands, c)
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\n':
			p.line++
			b.WriteByte(c)
			i++
		case c == '\'' || c == '"':
			openLine, openCol := p.line, col(s, i)
			j := i + 1
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c { // doubled quote
						j += 2
						continue
					}
					break
				}
				if s[j] == '\n' {
					p.line++
				}
				j++
			}
			if j >= len(s) {
				what := "quoted string"
				if c == '"' {
					what = "quoted identifier"
				}
				return p.errf(openLine, openCol, fmt.Sprintf("close the quote (%c) that opens here: everything after it up to the end of the file was read as part of it", c),
					"unterminated %s", what)
			}
			b.WriteString(s[i : j+1])
			i = j + 1
		case c == '$' && dollarTag(s[i:]) != "":
			tag := dollarTag(s[i:])
			end := strings.Index(s[i+len(tag):], tag)
			if end < 0 {
				return p.errf(p.line, col(s, i), "close it with "+tag+": everything after it up to the end of the file was read as part of it", "unterminated dollar-quoted string")
			}
			lit := s[i : i+len(tag)+end+len(tag)]
			p.line += strings.Count(lit, "\n")
			b.WriteString(lit)
			i += len(lit)
		case strings.HasPrefix(s[i:], "--"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			openLine, openCol := p.line, col(s, i)
			depth, j := 1, i+2
			for j < len(s) && depth > 0 {
				switch {
				case strings.HasPrefix(s[j:], "/*"):
					depth++
					j += 2
				case strings.HasPrefix(s[j:], "*/"):
					depth--
					j += 2
				default:
					if s[j] == '\n' {
						p.line++
					}
					j++
				}
			}
			if depth > 0 {
				return p.errf(openLine, openCol, "close it with */: everything after it up to the end of the file was read as part of it", "unterminated comment")
			}
			b.WriteByte(' ')
			i = j
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			// A cast (::type), or colons: left as they are.
			j := i
			for j < len(s) && s[j] == ':' {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		case c == ':' && i+1 < len(s) && isNameByte(s[i+1], true):
			j := i + 1
			for j < len(s) && isNameByte(s[j], false) {
				j++
			}
			slot := p.scope.Slot(s[i+1 : j])
			n, ok := slots[slot]
			if !ok {
				params = append(params, slot)
				n = len(params)
				slots[slot] = n
			}
			at := b.Len()
			b.WriteString("$" + strconv.Itoa(n))
			uses = append(uses, use{at: at, end: b.Len(), slot: slot, name: s[i+1 : j]})
			i = j
		case c == '\\' && i+1 < len(s) && s[i+1] == ';':
			b.WriteByte(';')
			splits = append(splits, b.Len())
			compound = true
			i += 2
		case c == ';':
			b.WriteByte(';')
			flush(i)
			p.pos = i + 1
			return nil
		case c == '\\':
			// A meta-command ends the SQL command; \gset and \aset
			// store its results.
			flush(i)
			p.pos = i
			word, _ := metaWord(s[i+1:])
			switch strings.ToLower(word) {
			case "gset", "aset":
				return p.store(&p.s.Commands[len(p.s.Commands)-1])
			}
			return nil
		default:
			b.WriteByte(c)
			i++
		}
	}
	flush(i)
	p.pos = i
	return nil
}

// col is the 1-based column of byte i of s in its line.
func col(s string, i int) int { return i - strings.LastIndexByte(s[:i], '\n') }

// dollarTag returns the $tag$ opening a dollar-quoted string at the start
// of s, or "".
func dollarTag(s string) string {
	if len(s) < 2 || s[0] != '$' {
		return ""
	}
	j := 1
	for j < len(s) && (isNameByte(s[j], j == 1) || s[j] >= '0' && s[j] <= '9' && j > 1) {
		j++
	}
	if j < len(s) && s[j] == '$' {
		return s[:j+1]
	}
	return ""
}
