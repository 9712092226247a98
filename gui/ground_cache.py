"""The ground of a view whose camera holds still, kept: the inset map's ground, grid and the
mission overlays lying on it (coverage, areas) drawn once into a texture and copied into the
view on every frame until the camera or the overlays change.

On llvmpipe (the video's renderer) the ground's per-pixel grid and fog and the coverage quads
blended over it are the frame's dearest fills; in the inset map they change only when the
mission's overlays do (a few times a minute: the coverage) or its camera moves (the inset's
top camera is snapped to steps: `gui.director.inset_camera`). A copy is one texel fetch a
pixel, without blending. The copied pixels are those the view would have drawn: the same
draws at the same pixel centres (the texture's origin is the view's, an integer offset), and
the framebuffer's alpha copied too.
"""

from __future__ import annotations

from collections.abc import Callable

import moderngl

COPY_VS = """
#version 330
in vec2 in_uv;
void main() { gl_Position = vec4(in_uv * 2.0 - 1.0, 0.0, 1.0); }
"""
# Texel (x, y) of the kept picture to the view's pixel (x, y) from its lower-left corner.
COPY_FS = """
#version 330
uniform sampler2D u_tex;
uniform ivec2 u_origin;
out vec4 f_color;
void main() { f_color = texelFetch(u_tex, ivec2(gl_FragCoord.xy) - u_origin, 0); }
"""


class GroundCache:
    """A view's ground layer (whatever `draw` puts in a cleared (w, h) target) kept in a
    texture under a key: `copy` draws it into the bound framebuffer's `viewport` (x, y, w, h,
    GL pixels), drawing it first when the key or the size changed.

    The key is compared by value, so it holds what the layer depends on: the camera matrix's
    bytes and the overlay list (kept, so its identity stays unique while it is the key).
    """

    def __init__(self, ctx: moderngl.Context, quad: moderngl.Buffer) -> None:
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=COPY_VS, fragment_shader=COPY_FS)
        self._vao = ctx.vertex_array(self.prog, [(quad, "2f", "in_uv")])
        self._fbo: moderngl.Framebuffer | None = None
        self._key: tuple[object, ...] | None = None
        self.fills = 0  # how often the layer was drawn (the rest were copies)

    def copy(
        self,
        key: tuple[object, ...],
        viewport: tuple[int, int, int, int],
        draw: Callable[[], None],
    ) -> None:
        """The layer into `viewport` of the bound framebuffer, drawn by `draw()` (into a
        (w, h) target, viewport set, nothing else bound) when `key` differs from the last."""
        x, y, w, h = viewport
        ctx = self.ctx
        target = ctx.fbo
        if self._fbo is None or self._fbo.size != (w, h):
            if self._fbo is not None:
                self._fbo.color_attachments[0].release()
                self._fbo.release()
            self._fbo = ctx.framebuffer(color_attachments=[ctx.texture((w, h), 4)])
            self._key = None
        if not _same_key(self._key, key):
            self._fbo.use()
            ctx.viewport = (0, 0, w, h)
            draw()
            target.use()
            self._key = key
            self.fills += 1
        ctx.viewport = viewport
        ctx.disable(moderngl.BLEND)
        self._fbo.color_attachments[0].use(0)
        self.prog["u_origin"].value = (x, y)
        self._vao.render(moderngl.TRIANGLE_STRIP)

    def release(self) -> None:
        if self._fbo is not None:
            self._fbo.color_attachments[0].release()
            self._fbo.release()
        self._vao.release()
        self.prog.release()


def _same_key(a: tuple[object, ...] | None, b: tuple[object, ...]) -> bool:
    """Lists (the overlays) by identity, everything else by value."""
    return (
        a is not None
        and len(a) == len(b)
        and all(x is y if isinstance(x, list) else x == y for x, y in zip(a, b))
    )
