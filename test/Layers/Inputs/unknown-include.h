#include "partita/Frontend/Models.h"
