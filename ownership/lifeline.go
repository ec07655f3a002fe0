package ownership

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// A watcher's lifeline is a pipe only its owner writes: a stream of
// messages, each naming one thing (a container) the owner made (Listed)
// or removed itself (Removed). The watcher answers each message it applied
// with one Ack byte on its own pipe, so the owner knows a thing is listed
// before it starts it. When the lifeline ends and the owner is dead (kill
// -9 too), the watcher removes what is still listed.
//
// A message is 4 bytes then its id: lineMagic, LineVersion, the op, the
// id's length (1 to MaxID), then the id: a container's id (lowercase
// hex, what Docker and Podman name a container by) or its name (lowercase
// letters, digits and ._-, from a letter or digit), which the owner lists
// before it asks for the container, so that its death between the create
// and the id's listing leaves nothing either. Decoding is strict: any
// other byte ends the stream with an error.

// LineVersion is the lifeline's message version: another is refused.
// Version 2 lists names as well as ids.
const LineVersion = 2

const lineMagic = 'W'

// MaxID bounds an id on the lifeline (a full container id is 64).
const MaxID = 64

// MaxListed bounds how many ids one lifeline may list at once.
const MaxListed = 1 << 16

// Ack is the watcher's answer to each message it applied.
const Ack = 'k'

// Op is what a lifeline message says of its id.
type Op byte

const (
	// Listed: the owner made it; remove it if the owner dies.
	Listed Op = '+'
	// Removed: the owner removed it itself; forget it.
	Removed Op = '-'
)

// Message is one lifeline message.
type Message struct {
	Op Op
	ID string
}

func (m Message) validate() error {
	if m.Op != Listed && m.Op != Removed {
		return fmt.Errorf("unknown op %q", byte(m.Op))
	}
	if len(m.ID) == 0 || len(m.ID) > MaxID {
		return fmt.Errorf("id of %d bytes: want 1 to %d", len(m.ID), MaxID)
	}
	for i := 0; i < len(m.ID); i++ {
		c := m.ID[i]
		alnum := c >= '0' && c <= '9' || c >= 'a' && c <= 'z'
		if !alnum && (i == 0 || !strings.ContainsRune("._-", rune(c))) {
			return fmt.Errorf("id %q: want a container's id (lowercase hex) or name (a-z, 0-9 and ._-, from a letter or digit)", m.ID)
		}
	}
	return nil
}

// IsName says whether a listed id is a container's name (listed before
// its create) rather than its id (64 lowercase hex digits).
func IsName(id string) bool {
	if len(id) != 64 {
		return true
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return true
		}
	}
	return false
}

// AppendMessage appends m's encoding to b.
func AppendMessage(b []byte, m Message) ([]byte, error) {
	if err := m.validate(); err != nil {
		return b, fmt.Errorf("lifeline message: %w", err)
	}
	b = append(b, lineMagic, LineVersion, byte(m.Op), byte(len(m.ID)))
	return append(b, m.ID...), nil
}

// ReadMessage reads one message: io.EOF at a clean end between messages,
// another error for anything else.
func ReadMessage(r io.Reader) (Message, error) {
	var h [4]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return Message{}, io.EOF
		}
		return Message{}, fmt.Errorf("lifeline: a message cut short: %w", err)
	}
	if h[0] != lineMagic {
		return Message{}, fmt.Errorf("lifeline: byte %#x where a message starts", h[0])
	}
	if h[1] != LineVersion {
		return Message{}, fmt.Errorf("lifeline: message version %d, this build reads %d", h[1], LineVersion)
	}
	if h[3] == 0 || h[3] > MaxID {
		return Message{}, fmt.Errorf("lifeline: id of %d bytes: want 1 to %d", h[3], MaxID)
	}
	id := make([]byte, h[3])
	if _, err := io.ReadFull(r, id); err != nil {
		return Message{}, fmt.Errorf("lifeline: a message cut short: %w", err)
	}
	m := Message{Op: Op(h[2]), ID: string(id)}
	if err := m.validate(); err != nil {
		return Message{}, fmt.Errorf("lifeline: %w", err)
	}
	return m, nil
}

// Follow reads a lifeline to its end, answering each message with Ack on
// acks (nil: no answers), and returns what is still listed, sorted. A bad
// message ends the reading with an error and what was listed until then.
func Follow(lifeline io.Reader, acks io.Writer) ([]string, error) {
	listed := map[string]bool{}
	r := bufio.NewReader(lifeline)
	var err error
	for {
		var m Message
		m, err = ReadMessage(r)
		if err != nil {
			break
		}
		if m.Op == Listed {
			if len(listed) >= MaxListed && !listed[m.ID] {
				err = fmt.Errorf("lifeline: over %d listed", MaxListed)
				break
			}
			listed[m.ID] = true
		} else {
			delete(listed, m.ID)
		}
		if acks != nil {
			if _, err = acks.Write([]byte{Ack}); err != nil {
				err = fmt.Errorf("lifeline: answering the owner: %w", err)
				break
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	ids := make([]string, 0, len(listed))
	for id := range listed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, err
}

// OwnerDied reports whether the owner (pid owner, started at ownerStart)
// is gone, once its lifeline ended: the end came from its death, kill -9
// too, rather than from an owner that closed it on purpose and lives on.
func OwnerDied(owner int, ownerStart string) bool {
	// A process killed with SIGKILL closes its descriptors before it
	// becomes a zombie; under load the watcher can wake in between and
	// see it alive. Give a dying owner a bounded while to be seen gone.
	deadline := time.Now().Add(ownerExitWait)
	for OwnerAlive(owner, ownerStart) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// ownerExitWait bounds how long a watcher waits, once the lifeline ended,
// for its owner to be seen gone (an owner that closed it on purpose and
// lives on keeps what it owns).
const ownerExitWait = 10 * time.Second
