"""One exception tree for every device driver.

Each class mixes in the built-in it refines, so callers that only know the
standard library (``except TimeoutError``) still catch the right thing, and each
is raised ``from`` the cause (a pyserial, pyusb, gpiozero or firmware_bridge
error) so the traceback keeps the wire-level reason.

Drivers do not raise these out of their background tasks: a failing device is
reported as a ``DeviceFault`` / ``LinkChanged`` event. They are raised only to a
caller that asked for something the device cannot do right now (a shuffle while
the shuffler is unplugged) or gave a bad configuration.
"""

from __future__ import annotations


class DriverError(Exception):
    """Root of every error raised by ``drivers``."""


class DriverConfigError(DriverError, ValueError):
    """A driver was configured wrongly; the message names the key, the value and what is allowed."""


class DeviceNotConnectedError(DriverError, ConnectionError):
    """The device's link is not up, so the request could not be sent."""


class DriverTimeoutError(DriverError, TimeoutError):
    """The device did not answer in time."""


# --- card-reading shoe --------------------------------------------------------


class ShoeError(DriverError):
    """Root of errors about the card-reading shoe."""


class ShoeNotConnectedError(ShoeError, DeviceNotConnectedError):
    """The shoe's link is not up."""


class ShoeTimeoutError(ShoeError, DriverTimeoutError):
    """The shoe did not answer in time."""


# --- batch shuffler -----------------------------------------------------------


class ShufflerError(DriverError):
    """Root of errors about the automated batch shuffler."""


class ShufflerNotConnectedError(ShufflerError, DeviceNotConnectedError):
    """The shuffler's link is not up, so no shuffle can be started."""


class ShufflerTimeoutError(ShufflerError, DriverTimeoutError):
    """The shuffler did not answer in time."""


class ShufflerBusyError(ShufflerError, RuntimeError):
    """A shuffle was requested while another one is still running."""


# --- seats, lock-out button and LEDs -----------------------------------------


class SeatPanelError(DriverError):
    """Root of errors about the GPIO seat panel."""


class SeatPanelConfigError(SeatPanelError, DriverConfigError):
    """Bad seat/pin configuration (seat count, duplicate pins, unknown pin factory)."""


# --- progressive display -----------------------------------------------------


class DisplayError(DriverError):
    """Root of errors about the progressive display and win lights."""


class DisplayTimeoutError(DisplayError, DriverTimeoutError):
    """The display did not answer in time."""

