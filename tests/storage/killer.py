"""An SVC that SIGKILLs its own process at the N-th fit (N from PRIVTUNE_KILL_AT), for crash tests."""

import os
import signal

from sklearn.svm import SVC


class KillSVC(SVC):
    def fit(self, X, y, **kw):
        kill_at = os.environ.get("PRIVTUNE_KILL_AT")
        counter = os.environ.get("PRIVTUNE_KILL_COUNTER")
        if counter:
            n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
            with open(counter, "w") as fh:
                fh.write(str(n))
            if kill_at and n == int(kill_at):
                os.kill(os.getpid(), signal.SIGKILL)
        return super().fit(X, y, **kw)
