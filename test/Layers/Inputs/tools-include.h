#include "../../tools/partita/Driver.h"
