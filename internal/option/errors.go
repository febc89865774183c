package option

import (
	"errors"
	"strings"
)

// Spelling says how option references are written in a message.
type Spelling int

const (
	// Key spells {max_tries} as max_tries (experiment files).
	Key Spelling = iota
	// Flag spells {max_tries} as --max-tries (the command line).
	Flag
)

// Error is a bad option value or combination. Msg and Hint name options as
// {name}; Error() spells them as experiment keys, Render in any spelling.
type Error struct {
	Msg  string
	Hint string
}

// Errorf makes an Error; msg and hint may reference options as {name}.
func Errorf(hint, msg string) *Error { return &Error{Msg: msg, Hint: hint} }

func (e *Error) Error() string { return Spell(e.Msg, Key) }

// Render returns the message and the hint in the given spelling.
func (e *Error) Render(sp Spelling) (msg, hint string) {
	return Spell(e.Msg, sp), Spell(e.Hint, sp)
}

// As finds an *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Spell replaces every {name} in s by the option's spelling. Text in braces
// that is not an option name (it has a space or an upper-case letter) is left
// as it is.
func Spell(s string, sp Spelling) string {
	if !strings.Contains(s, "{") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 || !isName(s[i+1:i+j]) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		name := s[i+1 : i+j]
		if sp == Flag {
			b.WriteString("--" + FlagName(name))
		} else {
			b.WriteString(name)
		}
		s = s[i+j+1:]
	}
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Ref is the reference to an option in a message: {name}.
func Ref(name string) string { return "{" + name + "}" }
