// An unknown EMBER_* variable is an error on first use of the registry. This
// runs in its own process (its own test executable), set before anything
// reads the environment.
#include "TestUtil.h"
#include "runtime/Env.h"

#include <cstdlib>

TEST(Env, UnknownEmberVariableIsAnError) {
  setenv("EMBER_NUM_THREDS", "4", 1); // a typo of EMBER_NUM_THREADS
  EXPECT_EMBER_ERROR(ember::env::get("EMBER_NUM_THREADS"),
                     "unknown environment variable(s) EMBER_NUM_THREDS");
  unsetenv("EMBER_NUM_THREDS");
}
