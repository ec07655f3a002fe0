package localplan

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Mode is a file mode's permission bits (with setuid, setgid, sticky). In
// JSON it is an octal string ("0755"), so a rendered plan reads as ls
// would print it; a plain number is accepted too.
type Mode uint32

// maxMode is every permission, setuid, setgid and sticky bit.
const maxMode = 0o7777

func (m Mode) String() string { return fmt.Sprintf("%04o", uint32(m)) }

// MarshalJSON writes the octal string.
func (m Mode) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// UnmarshalJSON reads an octal string or a number.
func (m *Mode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n uint32
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("mode %s: want an octal string such as \"0755\"", b)
		}
		*m = Mode(n)
		return nil
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return fmt.Errorf("mode %q: not octal", s)
	}
	*m = Mode(n)
	return nil
}
