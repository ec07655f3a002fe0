package seatbelt

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Mach services are how a macOS process reaches system daemons, and each
// one is a door out of the sandbox. The allowlist is what ordinary
// programs need to start (user and group lookups, the temp-dir helper,
// preferences, power assertions); everything else is denied by the
// default, and the services that are known doors are denied by name too.
var machAllowed = []nameFilter{
	{"global-name", "com.apple.system.opendirectoryd.libinfo"},    // getpwuid, getgrgid
	{"global-name", "com.apple.system.opendirectoryd.membership"}, // group membership
	{"global-name", "com.apple.bsd.dirhelper"},                    // confstr(DARWIN_USER_TEMP_DIR): git, xcrun
	{"global-name", "com.apple.cfprefsd.daemon"},                  // preferences, read only
	{"global-name", "com.apple.cfprefsd.agent"},
	{"local-name", "com.apple.cfprefsd.agent"},
	{"global-name", "com.apple.PowerManagement.control"},
}

// machBrowser is what headless Chromium (a reproducer's browser) needs: its
// own rendezvous service, registered and looked up by its processes, and
// fonts. Chromium must run with --no-sandbox: a sandboxed process cannot
// apply a sandbox of its own (sandbox_apply: Operation not permitted).
var machBrowser = []nameFilter{
	{"global-name-prefix", "org.chromium."},
}

var machFonts = []nameFilter{
	{"global-name", "com.apple.fonts"},
	{"global-name", "com.apple.FontObjectsServer"},
}

// machDNS are the resolver configuration services, with the network on.
var machDNS = []nameFilter{
	{"global-name", "com.apple.SystemConfiguration.DNSConfiguration"},
	{"global-name", "com.apple.SystemConfiguration.configd"},
}

// optIn is a service family denied by default that a library user may
// open, knowing what it costs.
type optIn struct {
	services []nameFilter
	ops      []string // extra operations allowed unfiltered
	risk     string
}

// optIns are the documented opt-ins (Options.OptIns). Each is denied by
// name unless opted in.
var optIns = map[string]optIn{
	"keychain": {services: []nameFilter{{"global-name", "com.apple.SecurityServer"}, {"global-name-prefix", "com.apple.securityd"}},
		risk: "the sandbox can ask securityd for every keychain item whose access list allows the caller"},
	"trustd": {services: []nameFilter{{"global-name-prefix", "com.apple.trustd"}},
		risk: "TLS verification through the system (Go needs it); trustd fetches OCSP and CRLs outside the sandbox"},
	"launchservices": {services: []nameFilter{{"global-name", "com.apple.coreservices.launchservicesd"}, {"global-name-prefix", "com.apple.lsd."}},
		risk: "`open` and LaunchServices start applications outside the sandbox"},
	"appleevents": {services: []nameFilter{{"global-name", "com.apple.coreservices.appleevents"}}, ops: []string{"appleevent-send"},
		risk: "Apple events script other applications, outside the sandbox"},
	"pasteboard": {services: []nameFilter{{"global-name-prefix", "com.apple.pasteboard."}},
		risk: "the clipboard, which holds whatever the operator copied (tokens included)"},
}

// machDeniedAlways are doors with no opt-in.
var machDeniedAlways = []nameFilter{
	{"global-name-prefix", "com.apple.windowserver"},
	{"global-name-prefix", "com.docker."},
}

// OptIns lists the service opt-ins and what each costs.
func OptIns() map[string]string {
	out := map[string]string{}
	for k, v := range optIns {
		out[k] = v.risk
	}
	return out
}

func checkOptIns(names []string) error {
	for _, n := range names {
		if _, ok := optIns[n]; !ok {
			known := make([]string, 0, len(optIns))
			for k := range optIns {
				known = append(known, k)
			}
			sort.Strings(known)
			return fmt.Errorf("seatbelt: unknown service opt-in %q: choose from %s", n, strings.Join(known, ", "))
		}
	}
	return nil
}

func filtersOf(ns []nameFilter) []filter {
	out := make([]filter, len(ns))
	for i, n := range ns {
		out[i] = n
	}
	return out
}

// services renders the mach allowlist, the role's extras and the opt-ins.
func (r *renderer) services() error {
	r.prof.add(phaseIPC, rule{act: allow, ops: []string{"mach-lookup"}, filters: filtersOf(machAllowed),
		comment: "System services every program needs to start; no other."})
	if r.p.Role == profiles.RoleReproducer {
		r.prof.add(phaseIPC, rule{act: allow, ops: []string{"mach-register", "mach-lookup"}, filters: filtersOf(machBrowser),
			comment: "Headless Chromium's own services (run it with --no-sandbox)."})
		r.prof.add(phaseIPC, rule{act: allow, ops: []string{"mach-lookup"}, filters: filtersOf(machFonts)})
		r.prof.add(phaseIPC, rule{act: allow, ops: []string{"iokit-open"},
			filters: []filter{nameFilter{"iokit-registry-entry-class", "IOSurfaceRootUserClient"}}})
	}
	if r.p.Network.Mode == policy.NetworkOutbound {
		r.prof.add(phaseIPC, rule{act: allow, ops: []string{"mach-lookup"}, filters: filtersOf(machDNS)})
	}
	names := append([]string(nil), r.in.OptIns...)
	sort.Strings(names)
	for _, n := range slices.Compact(names) {
		o := optIns[n]
		r.prof.add(phaseIPC, rule{act: allow, ops: []string{"mach-lookup"}, filters: filtersOf(o.services),
			comment: "Opt-in " + n + ": " + o.risk + "."})
		for _, op := range o.ops {
			r.prof.add(phaseIPC, rule{act: allow, ops: []string{op}})
		}
	}
	return nil
}

// machDenyRule names every door not opted in.
func (r *renderer) machDenyRule() rule {
	var fs []filter
	keys := make([]string, 0, len(optIns))
	for k := range optIns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(r.in.OptIns, k) {
			fs = append(fs, filtersOf(optIns[k].services)...)
		}
	}
	fs = append(fs, filtersOf(machDeniedAlways)...)
	return rule{act: deny, ops: []string{"mach-lookup", "mach-register"}, filters: fs, tagged: true,
		comment: "Services that reach outside the sandbox: keychain, trust evaluation, LaunchServices, Apple events, the clipboard, the window server, Docker."}
}
