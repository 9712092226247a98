"""GLSL 330 sources of the renderer's programs: shaded meshes, flat lines and markers, the
anti-aliased ground grid with fog, the sky gradient, and screen-space images (panel, HUD).
"""

MESH_VS = """
#version 330
uniform mat4 u_vp;
in vec3 in_position;
in vec3 in_normal;
in mat4 in_model;
in vec4 in_color;
out vec3 v_normal;
out vec4 v_color;
void main() {
    gl_Position = u_vp * in_model * vec4(in_position, 1.0);
    v_normal = mat3(in_model) * in_normal;
    v_color = in_color;
}
"""
# u_ids = 1: the colour unshaded (the ID buffer of gui/picking.py: colours encode agent ids).
MESH_FS = """
#version 330
uniform float u_ids;
in vec3 v_normal;
in vec4 v_color;
out vec4 f_color;
void main() {
    vec3 light = normalize(vec3(0.3, 0.2, 1.0));
    float shade = 0.45 + 0.55 * max(dot(normalize(v_normal), light), 0.0);
    f_color = u_ids > 0.5 ? v_color : vec4(v_color.rgb * shade, v_color.a);
}
"""
FLAT_VS = """
#version 330
uniform mat4 u_vp;
in vec3 in_position;
in vec4 in_color;
out vec4 v_color;
void main() { gl_Position = u_vp * vec4(in_position, 1.0); v_color = in_color; }
"""
# Trails kept on the GPU (gui/trails.py TrailPass): the vertex buffer is (C + 1) rows of N points
# (vertex id = row * N + agent, gl_VertexID in an indexed draw) and each row's RGBA is in a
# table (u_looks, LOOKS_W = 256 texels a row): the colour a line vertex carried, so with FLAT_FS
# the same pixels. From a texture, not a uniform: Mesa's linker folds a uniform (or constant)
# RGB into the fragment shader, exact, where the RGB of line vertices is interpolated, with
# rounding: one level of 255 apart in a few thousand pixels of a 1,000-trail frame.
TRAIL_VS = """
#version 330
uniform mat4 u_vp;
uniform int u_agents;
uniform sampler2D u_looks;
in vec3 in_position;
out vec4 v_color;
void main() {
    gl_Position = u_vp * vec4(in_position, 1.0);
    int row = gl_VertexID / u_agents;
    v_color = texelFetch(u_looks, ivec2(row % 256, row / 256), 0);
}
"""
FLAT_FS = """
#version 330
in vec4 v_color;
out vec4 f_color;
void main() { f_color = v_color; }
"""
# Drone markers: round point sprites (the point size is the marker's diameter in pixels) with a
# dark rim, so a marker reads on the ground and in the sky alike; flat in the ID buffer.
MARKER_FS = """
#version 330
uniform float u_ids;
in vec4 v_color;
out vec4 f_color;
void main() {
    float r = length(gl_PointCoord - vec2(0.5)) * 2.0;  // 0 at the centre, 1 at the rim
    if (r > 1.0) discard;
    f_color = (u_ids > 0.5 || r < 0.7) ? v_color : vec4(v_color.rgb * 0.35, 1.0);
}
"""
# Blob shadows: one instanced ground quad per agent (in_disc: centre x, y, radius m, alpha at
# the centre), its alpha falling linearly to 0 at the radius: the soft disc a 16-triangle fan drew,
# with 2 triangles (llvmpipe's cost is per vertex and per primitive, shadows are a few px).
# Outside the disc the alpha is 0: blending leaves those pixels exactly as they were.
SHADOW_VS = """
#version 330
uniform mat4 u_vp;
in vec2 in_corner;
in vec4 in_disc;
out vec2 v_uv;
out float v_alpha;
void main() {
    vec2 xy = in_disc.xy + in_disc.z * in_corner;
    gl_Position = u_vp * vec4(xy, 0.01, 1.0);
    v_uv = in_corner;
    v_alpha = in_disc.w;
}
"""
SHADOW_FS = """
#version 330
in vec2 v_uv;
in float v_alpha;
out vec4 f_color;
void main() { f_color = vec4(0.0, 0.0, 0.0, v_alpha * max(1.0 - length(v_uv), 0.0)); }
"""
GROUND_VS = """
#version 330
uniform mat4 u_vp;
in vec3 in_position;
out vec2 v_xy;
void main() { gl_Position = u_vp * vec4(in_position, 1.0); v_xy = in_position.xy; }
"""
# Anti-aliased procedural grid: line coverage from the screen-space derivative of the grid
# coordinate (fwidth), and each grid level fades out before its cells get smaller than a few
# pixels, so far lines blend into the ground instead of shimmering (and inflating video files).
# Fog grows with the view depth (1 / gl_FragCoord.w), as fixed-function OpenGL fog did: no
# per-pixel distance and one varying fewer, ~10 % of a 720p frame under llvmpipe; the distance
# would add a little more fog at the sides of the view only.
GROUND_FS = """
#version 330
uniform vec3 u_ground;
uniform vec3 u_minor;
uniform vec3 u_major;
uniform vec3 u_horizon;
uniform float u_fog_m;
in vec2 v_xy;
out vec4 f_color;
float line(vec2 c, vec2 d, float width_px) {
    vec2 g = abs(fract(c - 0.5) - 0.5) / d;
    return 1.0 - clamp(min(g.x, g.y) - 0.5 * width_px + 0.5, 0.0, 1.0);
}
void main() {
    vec2 p = v_xy;
    vec2 d = max(fwidth(p), vec2(1e-6));  // m per pixel; derivatives outside the branches
    float m_px = max(d.x, d.y);
    vec3 c = u_ground;
    if (m_px < 0.25) {  // 1 m cells bigger than 4 px: draw the minor lines, faded out before
        c = mix(c, u_minor, line(p, d, 1.0) * (1.0 - smoothstep(0.08, 0.25, m_px)));
    }
    if (m_px < 2.5) {  // the same for the 10 m major lines
        c = mix(c, u_major, line(p * 0.1, d * 0.1, 1.5) * (1.0 - smoothstep(0.8, 2.5, m_px)));
    }
    float fog = 1.0 - exp2(-1.442695 / (gl_FragCoord.w * u_fog_m));  // 1 - exp(-depth / fog)
    f_color = vec4(mix(c, u_horizon, fog), 1.0);
}
"""
SKY_VS = """
#version 330
uniform float u_y0;  // NDC height of the horizon: the sky is drawn above it only
in vec2 in_uv;
out float v_y;
void main() {
    gl_Position = vec4(in_uv.x * 2.0 - 1.0, mix(u_y0, 1.0, in_uv.y), 0.999, 1.0);
    v_y = in_uv.y;
}
"""
SKY_FS = """
#version 330
uniform vec3 u_top;
uniform vec3 u_horizon;
in float v_y;
out vec4 f_color;
void main() { f_color = vec4(mix(u_horizon, u_top, smoothstep(0.0, 0.7, v_y)), 1.0); }
"""
IMAGE_VS = """
#version 330
uniform vec4 u_rect;  // x0, y0, x1, y1 in NDC
in vec2 in_uv;
out vec2 v_uv;
void main() {
    gl_Position = vec4(mix(u_rect.xy, u_rect.zw, in_uv), 0.0, 1.0);
    v_uv = vec2(in_uv.x, 1.0 - in_uv.y);  // images are stored top row first
}
"""
IMAGE_FS = """
#version 330
uniform sampler2D u_tex;
in vec2 v_uv;
out vec4 f_color;
void main() { f_color = texture(u_tex, v_uv); }
"""
