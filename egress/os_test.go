package egress

import "os"

var osStat = os.Stat
