#include "partita/Runtime/Execution/Run.h"
