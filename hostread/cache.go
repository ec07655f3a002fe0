package hostread

import (
	"path/filepath"
	"sync"
	"time"
)

// DefaultSettle is how old every timestamp read must be before a result
// is kept. A file's mtime and ctime come from a coarse clock (a jiffy on
// Linux, up to 2 s on some filesystems): a file changed twice within one
// tick, keeping its size, keeps its identity. A result computed from a
// file changed that recently is not kept ("racily clean", as git says of
// its index); the next compile, once the file has settled, is.
const DefaultSettle = 2 * time.Second

// maxEntries bounds a Cache: a keeper serves a few directories and
// environments, not thousands.
const maxEntries = 32

// Cache keeps values computed from what a Recorder saw, each valid while
// every Read is unchanged. Safe for concurrent use.
type Cache[V any] struct {
	// Settle: zero is DefaultSettle.
	Settle time.Duration

	mu      sync.Mutex
	entries map[string]*entry[V]
	tick    uint64
}

type entry[V any] struct {
	reads []Read
	v     V
	used  uint64
	// absent groups the reads of absent paths by their directory (a
	// home's unreadable credential paths are dozens of them): while the
	// directory is what it was, to its times, no entry was made in it
	// and each stays absent; one stat instead of dozens.
	absent []absentGroup
	// rest are the reads no group covers.
	rest []int
}

type absentGroup struct {
	dir     Read
	members []int
}

// Get returns key's value when every path it was computed from is still
// what it was, and still (when set) says the value holds; an entry that
// fails either is dropped.
func (c *Cache[V]) Get(key string, still func(V) bool) (V, bool) {
	var zero V
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok {
		return zero, false
	}
	if !e.unchanged() {
		c.drop(key, e)
		return zero, false
	}
	if still != nil && !still(e.v) {
		c.drop(key, e)
		return zero, false
	}
	c.mu.Lock()
	c.tick++
	e.used = c.tick
	c.mu.Unlock()
	return e.v, true
}

func (c *Cache[V]) drop(key string, e *entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[key] == e {
		delete(c.entries, key)
	}
}

// Put keeps v for key, computed from reads by a compile that began at
// began. It keeps nothing, and says why, when a read cannot be compared
// later or a timestamp read is younger than Settle before began.
func (c *Cache[V]) Put(key string, began time.Time, reads []Read, v V) (why string) {
	if why := c.unsettled(began, reads); why != "" {
		return why
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*entry[V]{}
	}
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxEntries {
		c.evict()
	}
	c.tick++
	e := &entry[V]{reads: reads, v: v, used: c.tick}
	e.group(began.Add(-c.settle()).UnixNano())
	c.entries[key] = e
	return ""
}

func (c *Cache[V]) settle() time.Duration {
	if c.Settle == 0 {
		return DefaultSettle
	}
	return c.Settle
}

// enoent is how identOf says a path is absent.
var enoent = Ident{Err: "errno " + errNoEnt}

// group makes e's absent groups: directories holding two or more absent
// paths, each taken now with its times, which must be older than limit.
// The identity is taken after the compile, so an entry made in the
// directory since the compile began leaves it younger than limit: no
// group then, and every path is checked on its own.
func (e *entry[V]) group(limit int64) {
	byDir := map[string][]int{}
	for i, r := range e.reads {
		if r.Ident == enoent {
			d := filepath.Dir(r.Path)
			byDir[d] = append(byDir[d], i)
		}
	}
	grouped := map[int]bool{}
	for d, members := range byDir {
		if len(members) < 2 {
			continue
		}
		id := identOf(d, List)
		if id.Err != "" || id.Mode&modeType != modeDir || id.MtimeNs >= limit || id.CtimeNs >= limit {
			continue
		}
		e.absent = append(e.absent, absentGroup{dir: Read{Path: d, Kind: List, Ident: id}, members: members})
		for _, i := range members {
			grouped[i] = true
		}
	}
	for i := range e.reads {
		if !grouped[i] {
			e.rest = append(e.rest, i)
		}
	}
}

// unchanged: every read of e is what it was.
func (e *entry[V]) unchanged() bool {
	for _, g := range e.absent {
		if g.dir.Unchanged() {
			continue
		}
		for _, i := range g.members {
			if !e.reads[i].Unchanged() {
				return false
			}
		}
	}
	for _, i := range e.rest {
		if !e.reads[i].Unchanged() {
			return false
		}
	}
	return true
}

// unsettled names the first read that makes a result unfit to keep.
func (c *Cache[V]) unsettled(began time.Time, reads []Read) string {
	settle := c.settle()
	limit := began.Add(-settle).UnixNano()
	for _, r := range reads {
		switch {
		case r.Ident.Err == errUnsupported:
			return r.Path + ": " + errUnsupported
		case r.Ident.Err == "" && (r.Ident.MtimeNs >= limit || r.Ident.CtimeNs >= limit):
			return r.Path + " changed less than " + settle.String() + " before the compile"
		}
	}
	return ""
}

// evict drops the least recently used entry.
func (c *Cache[V]) evict() {
	var oldest string
	var at uint64
	for k, e := range c.entries {
		if oldest == "" || e.used < at {
			oldest, at = k, e.used
		}
	}
	delete(c.entries, oldest)
}

// Len is how many entries are kept.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
