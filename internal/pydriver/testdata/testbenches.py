# Benches for ctxlab's own tests, kept out of the shipped driver. The
# driver loads this module when CTXLAB_DRIVER_TEST_BENCHES names it (and
# PYTHONPATH finds it), calling register with the driver's namespace.
import os
import time


def register(d):
    Bench, pc = d["Bench"], d["pc"]

    class Spin(Bench):
        """Each op spins op_ns on the clock; the arm's very first op spins
        first_ns more (lazy set-up that the clock sees)."""

        def setup(self):
            self.op_ns = int(self.p.get("op_ns", 1000))
            self.extra = int(self.p.get("first_ns", 0))
            self.ops_per_unit = int(self.p.get("unit", 1))

        def run(self, n, every, samples):
            op_ns, extra, unit = self.op_ns, self.extra, self.ops_per_unit
            self.extra = 0
            n = -(-n // unit) * unit  # whole units, as a ring runs whole laps
            chunks, rest = divmod(n // unit, every)
            t0 = pc()
            end = t0 + extra
            while pc() < end:
                pass
            for _ in range(chunks):
                s = pc()
                end = s + op_ns * unit
                while pc() < end:
                    pass
                samples.append((pc() - s) // unit)
                end = pc() + op_ns * unit * (every - 1)
                while pc() < end:
                    pass
            end = pc() + op_ns * unit * rest
            while pc() < end:
                pass
            return pc() - t0, n

    class Crash(Bench):
        """The driver dies while setting the arm up."""

        def setup(self):
            os._exit(3)

    class Sleep(Bench):
        """Setting the arm up takes `seconds` (a hung interpreter)."""

        def setup(self):
            time.sleep(float(self.p.get("seconds", 3600)))

        def run(self, n, every, samples):
            return 1, n

    d["BENCHES"].update({"test.spin": Spin, "test.crash": Crash, "test.sleep": Sleep})
