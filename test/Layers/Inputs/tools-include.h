#include "../../tools/partita/Flags.h"
